"""Every example workflow as a user's repository gets it (issue 43, item 2), its placeholder
`OWNER/agent-run@<40 hex>` rewritten to this checkout (`local/agent-run@<HEAD>`), its job run here as far as this
machine allows (tests/fakes/actions.py): the action from the checkout, or agent-run installed by the workflow's own
`pip install` line (a `python` stand-in checks the line names one commit for both the package and its constraints,
then puts agent-run on PATH), the sandbox set up by the workflow's own step on a host whose bwrap refuses user
namespaces until the AppArmor profile is loaded (tests/fakes/ubuntu_host.py), then `--sandbox required` runs against
the scripted model server and, for the events, the scripted GitHub REST API; the landing examples push to a real git
remote on loopback (tests/fakes/git_remote.py) named as GITHUB_SERVER_URL/GITHUB_REPOSITORY say."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from tests.conftest import agent_run_argv
from tests.fakes.actions import Runner
from tests.fakes.git_remote import GitRemote
from tests.fakes.github_server import TOKEN, FakeGitHub
from tests.fakes.openai_server import reply
from tests.fakes.ubuntu_host import Host
from tests.fakes.zygote_shim import install
from tests.github import payloads
from tests.test_ci_action_job import venv
from tests.test_workflows import PLACEHOLDER, ROOT, load

EXAMPLES = ROOT / "examples" / "workflows"
HEAD = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
PIN = f"local/agent-run@{HEAD}"
# `python -m pip install …`: the line must name one commit for agent-run and its constraints; then agent-run is there.
FAKE_PYTHON = """#!/bin/sh
if [ "$1 $2 $3" = "-m pip install" ]; then printf '%s\\n' "$@" > {log}; ln -sf {shim} {site}/agent-run; exit 0; fi
exec {python} "$@"
"""
PIP = ["-m", "pip", "install", "--quiet", "-c",
       f"https://raw.githubusercontent.com/local/agent-run/{HEAD}/constraints.txt",
       f"agent-run @ git+https://github.com/{PIN}"]
PROFILE = ["sudo tee /etc/apparmor.d/agent-run-bwrap", "sudo apparmor_parser -r /etc/apparmor.d/agent-run-bwrap",
           "apparmor_parser -r /etc/apparmor.d/agent-run-bwrap"]


def copied(name: str) -> dict[str, Any]:
    """The example as a user's copy, its placeholder replaced (the pin's tag comment stays)."""
    text = (EXAMPLES / name).read_text(encoding="utf-8")
    assert PLACEHOLDER in text and PLACEHOLDER in text.split("\nname:", 1)[0]  # named in the header too
    return YAML(typ="safe", pure=True).load(text.replace(PLACEHOLDER, PIN))


class Machine:
    def __init__(self, tmp_path: Path, zygote: Any, base_url: str, kind: str) -> None:
        self.host = Host(tmp_path, kind)
        self.ws, self.temp = tmp_path / "ws", tmp_path / "runner-temp"
        self.ws.mkdir()
        self.temp.mkdir()
        subprocess.run(["git", "init", "-q", "-b", "main"], cwd=self.ws, check=True)
        (self.ws / "README.md").write_text("# hello\n")
        subprocess.run(["git", "add", "-A"], cwd=self.ws, check=True)
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"], cwd=self.ws,
                       check=True)
        venv(self.temp, zygote)  # the action's cached venv
        self.site, self.pip_log = tmp_path / "site-bin", tmp_path / "pip-args"
        shim = install(zygote, tmp_path / "shim-bin", agent_run_argv()[0])
        self.site.mkdir()
        (self.host.bin / "python").write_text(FAKE_PYTHON.format(log=self.pip_log, shim=shim, site=self.site,
                                                                 python="/usr/bin/python3"))
        (self.host.bin / "python").chmod(0o755)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENT_RUN_", "GITHUB_"))}
        self.env = env | {"PATH": self.host.path(f"{self.site}:/usr/sbin:/usr/bin:/sbin:/bin"),
                          "OPENAI_BASE_URL": base_url, "AGENT_RUN_RETRY_BASE_S": "0.01"}
        self.artifacts = tmp_path / "artifacts"

    def runner(self, event_name: str, event: dict[str, Any], api_url: str = "",
               server_url: str = "https://github.example") -> Runner:
        path = self.temp.parent / f"event-{event_name}.json"
        path.write_text(json.dumps(event))
        github = {"event_name": event_name, "event": event, "event_path": str(path), "run_id": "4242",
                  "run_attempt": "1", "repository": "octo/hello", "token": TOKEN, "api_url": api_url,
                  "server_url": server_url, "ref": "refs/heads/main", "actor": "alice"}
        return Runner(self.ws, self.temp, self.env, github, secrets={"OPENAI_API_KEY": "sk-test"},
                      actions={PIN: ROOT}, rewrite=self.host.rewrite, artifacts=self.artifacts)


@pytest.fixture
def machine(request, tmp_path, agent_run_zygote, fake) -> Machine:
    """A runner whose bwrap works at once (the action's profile loading is tests/test_ci_action_job.py's); the
    workflows that set the sandbox up themselves get a 24.04 host (`@pytest.mark.parametrize("machine", ["24.04"],
    indirect=True)`)."""
    return Machine(tmp_path, agent_run_zygote, fake.base_url, getattr(request, "param", "22.04"))


@pytest.fixture
def gh() -> Iterator[FakeGitHub]:
    with FakeGitHub(permissions={"alice": "write"}) as server:
        yield server


def outcomes(steps: list[Any]) -> dict[str, str]:
    return {s.name: s.conclusion for s in steps}


def summary_of(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))


def test_pr_task_then_replay_denied_approves_the_call_it_denied(machine, fake, gh):
    (machine.ws / ".github" / "agent").mkdir(parents=True)
    (machine.ws / ".github" / "agent" / "review.md").write_text("List the files.\n")
    fake.add(reply("Listing.", calls=[("bash", {"command": "ls"})]), reply("could not list them"))
    runner = machine.runner("pull_request", payloads.pull_request("opened"), gh.url)  # the action asks who opened it
    steps = outcomes(runner.run_job(copied("pr-task.yml"), "agent"))
    assert steps["Review the change"] == "failure" and steps["Explain denials"] == "success", runner.log()
    artifact = machine.artifacts / "agent-run-agent-4242-1"
    denied = summary_of(artifact)
    assert (denied["status"], denied["sandbox"]["active"]) == ("denied", True)

    inputs = {"run-id": "4242", "artifact": artifact.name, "calls": "", "ref": "", "continue": False}
    shutil.rmtree(machine.ws / ".agent-run")  # another job: a fresh checkout
    runner = machine.runner("workflow_dispatch", {"inputs": inputs})
    steps = outcomes(runner.run_job(copied("replay-denied.yml"), "replay", inputs=inputs))
    assert set(steps.values()) == {"success"}, runner.log()
    assert machine.pip_log.read_text().splitlines() == PIP  # (its sandbox set-up on 24.04: the nightly test's)
    [replayed] = (machine.artifacts / "agent-run-replay-4242-1").iterdir()
    result = summary_of(replayed)
    assert (result["status"], result["sandbox"]["mode"], result["sandbox"]["active"]) == ("success", "required", True)


@pytest.mark.parametrize("machine", ["24.04"], indirect=True)
def test_nightly_runs_every_task_in_the_sandbox_and_reports_them(machine, fake):
    (machine.ws / "tasks").mkdir()
    (machine.ws / "tasks" / "a.md").write_text("Task a: say done.\n")  # one: each task is a process of its own
    fake.add(reply("a done"))
    runner = machine.runner("schedule", {"schedule": "17 3 * * *"})
    steps = outcomes(runner.run_job(copied("nightly.yml"), "batch"))
    assert set(steps.values()) == {"success"}, runner.log()
    assert machine.pip_log.read_text().splitlines() == PIP and machine.host.calls() == PROFILE
    runs = sorted((machine.artifacts / "agent-run-nightly-4242-1").iterdir())
    assert [summary_of(r)["sandbox"]["mode"] for r in runs if (r / "summary.json").exists()] == ["required"]
    assert ("dorny/test-reporter", {"name": "agent-run tasks", "path": "report.xml", "reporter": "java-junit",
                                    "fail-on-error": False, "fail-on-empty": False}) in runner.calls


def test_batch_matrix_runs_four_shards_and_merges_them(machine, fake):
    (machine.ws / "tasks").mkdir()
    (machine.ws / "tasks" / "a.md").write_text("Task a: say done.\n")  # shard 1's; the others have none
    fake.add(reply("a done"))
    workflow = copied("batch-matrix.yml")
    for shard in (1, 2, 3, 4):
        shutil.rmtree(machine.ws / ".agent-run", ignore_errors=True)  # each a fresh checkout
        runner = machine.runner("schedule", {"schedule": "43 2 * * *"})
        steps = outcomes(runner.run_job(workflow, "shard", matrix={"shard": shard}, index=shard - 1, total=4))
        assert set(steps.values()) == {"success"}, runner.log()
    runner = machine.runner("schedule", {"schedule": "43 2 * * *"})
    steps = outcomes(runner.run_job(workflow, "merge"))
    assert set(steps.values()) == {"success"}, runner.log()
    merged = json.loads((machine.ws / "merged" / "batch.json").read_text())
    assert merged["exit_code"] == 0 and merged["shards"]["missing"] == [] and len(merged["tasks"]) == 1, merged


def test_mention_answers_a_writers_comment(machine, fake, gh):
    fake.add(reply("It fails because 3.13 removed the module."))
    runner = machine.runner("issue_comment", payloads.issue_comment("@agent-run why does the build fail?"), gh.url)
    steps = outcomes(runner.run_job(copied("mention.yml"), "respond"))
    assert set(steps.values()) == {"success"}, runner.log()
    assert any("3.13 removed the module" in c["body"] for c in gh.on(5))


def test_pr_review_posts_one_review_and_uploads_the_sarif(machine, fake, gh):
    gh.heads[7] = "d" * 40
    gh.files[7] = [{"sha": "3" * 40, "filename": "README.md", "status": "modified", "additions": 1, "deletions": 0,
                    "changes": 1, "patch": "@@ -1 +1,2 @@\n # hello\n+A retyr on failure."}]
    fake.add(reply(json.dumps({"summary": "One typo.", "findings": [
        {"path": "README.md", "line": 2, "severity": "note", "title": "typo", "message": "retyr: retry"}]})))
    runner = machine.runner("pull_request", payloads.pull_request("opened"), gh.url)
    steps = outcomes(runner.run_job(copied("pr-review.yml"), "review"))
    assert set(steps.values()) == {"success"}, runner.log()
    [review] = gh.reviews[7]
    assert "typo" in json.dumps(review)
    sarif = dict(runner.calls)["github/codeql-action/upload-sarif"]["sarif_file"]
    assert sarif.endswith("/findings.sarif") and Path(sarif).is_file()


@pytest.fixture
def remote(tmp_path, machine) -> Iterator[GitRemote]:
    """octo/hello on a git server at GITHUB_SERVER_URL, holding the workspace's main."""
    (tmp_path / "remote").mkdir()
    with GitRemote(tmp_path / "remote", name="octo/hello") as server:
        subprocess.run(["git", "push", "-q", str(server.bare), "main"], cwd=machine.ws, check=True)
        yield server


def landed(remote: GitRemote, gh: FakeGitHub, branch: str) -> dict[str, Any]:
    """The one draft pull request, from `branch`, whose tip is one commit holding the agent's change."""
    tip = remote.git("rev-parse", f"refs/heads/{branch}").strip()
    assert remote.git("diff", "--name-only", f"{tip}^", tip).split() == ["CHANGELOG.md"]
    [pr] = gh.pulls.values()
    assert pr["draft"] is True and pr["head"]["ref"] == branch
    return pr


def test_nightly_chore_lands_its_change_as_a_draft_pull_request(machine, fake, gh, remote):
    (machine.ws / "tasks").mkdir()
    (machine.ws / "tasks" / "chore.md").write_text("Start a changelog.\n")
    (machine.ws / ".gitignore").write_text(".agent-run/\n")
    subprocess.run(["git", "add", "-A"], cwd=machine.ws, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "chore"], cwd=machine.ws,
                   check=True)
    fake.add(reply(calls=[("write", {"path": "CHANGELOG.md", "content": "# Changelog\n"})]), reply("Started it."))
    runner = machine.runner("schedule", {"schedule": "23 4 * * 1-5"}, gh.url, remote.url.removesuffix("/octo/hello"))
    steps = outcomes(runner.run_job(copied("nightly-chore.yml"), "chore"))
    assert set(steps.values()) == {"success"}, runner.log()
    landed(remote, gh, "agent-run/tasks-chore")


def test_issue_to_pr_answers_the_labelled_issue_with_a_draft_pull_request(machine, fake, gh, remote):
    (machine.ws / ".gitignore").write_text(".agent-run/\n")
    subprocess.run(["git", "add", "-A"], cwd=machine.ws, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "ignore"], cwd=machine.ws,
                   check=True)
    fake.add(reply(calls=[("write", {"path": "CHANGELOG.md", "content": "# Changelog\n"})]), reply("Started it."))
    event = payloads.issues("labeled", "alice") | {"label": {"name": "agent-run"}}
    runner = machine.runner("issues", event, gh.url, remote.url.removesuffix("/octo/hello"))
    steps = outcomes(runner.run_job(copied("issue-to-pr.yml"), "land"))
    assert set(steps.values()) == {"success"}, runner.log()
    pr = landed(remote, gh, "agent-run/issue-5")
    assert any(pr["html_url"] in c["body"] for c in gh.on(5))


def test_fork_review_reviews_a_forks_pull_request_a_writer_labelled_on_the_base_checkout(machine, fake, gh):
    gh.heads[7], gh.files[7] = "f" * 40, [{"sha": "3" * 40, "filename": "README.md", "status": "modified",
                                          "additions": 1, "deletions": 0, "changes": 1,
                                          "patch": "@@ -1 +1,2 @@\n # hello\n+A retyr on failure."}]
    gh.forks.add(7)
    base = subprocess.run(["git", "rev-parse", "HEAD"], cwd=machine.ws, capture_output=True, text=True).stdout
    fake.add(reply(json.dumps({"summary": "One typo.", "findings": [
        {"path": "README.md", "line": 2, "severity": "note", "title": "typo", "message": "retyr: retry"}]})))
    event = payloads.pull_request("labeled", "mallory", head_repo="stranger/hello") | {
        "sender": {"login": "alice", "type": "User"}, "label": {"name": "agent-run"}}
    runner = machine.runner("pull_request_target", event, gh.url)
    steps = outcomes(runner.run_job(copied("fork-review.yml"), "review"))
    assert set(steps.values()) == {"success"}, runner.log()
    [review] = gh.reviews[7]
    assert review["commit_id"] == "f" * 40 and "typo" in json.dumps(review)
    # review-only: the read tools alone; the workspace stayed the base branch's checkout
    assert [t["function"]["name"] for t in fake.requests[0]["tools"]] == [
        "read", "list", "glob", "grep", "memory_search", "todo"]
    assert subprocess.run(["git", "rev-parse", "HEAD"], cwd=machine.ws, capture_output=True, text=True).stdout == base


@pytest.mark.parametrize("name", sorted(p.name for p in EXAMPLES.glob("*.yml")))
def test_each_example_names_agent_run_by_the_placeholder_only(name):
    text = (EXAMPLES / name).read_text(encoding="utf-8")
    assert "uses: ./" not in text and "INSTALL_FROM" not in text and "owner/agent-run" not in text
    workflow = load(EXAMPLES / name)
    uses = [s.get("uses", "") for job in workflow["jobs"].values() for s in job["steps"]]
    runs = [s.get("run", "") for job in workflow["jobs"].values() for s in job["steps"]]
    if f"{PLACEHOLDER} # v" in text and any(u == PLACEHOLDER for u in uses):
        return  # the action, by the pin
    assert workflow["env"]["AGENT_RUN_AT"] == PLACEHOLDER
    installs = [r for r in runs if "pip install" in r]
    assert installs and all('"agent-run @ git+https://github.com/$AGENT_RUN_AT"' in r and
                            "/${AGENT_RUN_AT#*@}/constraints.txt" in r for r in installs)
    commands = [r for r in runs if "agent-run " in r and "pip install" not in r and "sandbox check" not in r]
    assert all("--sandbox required" in r for r in commands if "batch-merge" not in r), commands
