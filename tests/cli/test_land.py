"""Landing a run's change (issue 40: `--land commit|branch|pr`): through the real CLI against the scripted model
server, the scripted GitHub REST API (tests/fakes/github_server.py) and a real git smart-HTTP remote on 127.0.0.1
(`git http-backend` behind a server that takes the token only as github.com does, tests/fakes/git_remote.py)."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli.test_github_respond import job_env
from tests.fakes.git_remote import GitRemote
from tests.fakes.github_server import TOKEN, FakeGitHub
from tests.fakes.openai_server import reply
from tests.github import payloads

GIT_ENV = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_CONFIG_GLOBAL": "/dev/null"}
AUTHOR = "agent-run <agent-run@users.noreply.github.com>"


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args], cwd=cwd,
                          env=GIT_ENV, check=True, capture_output=True, text=True, timeout=60).stdout


@pytest.fixture
def remote(tmp_path: Path) -> Iterator[GitRemote]:
    (tmp_path / "remote").mkdir()
    with GitRemote(tmp_path / "remote") as server:
        yield server


@pytest.fixture
def gh() -> Iterator[FakeGitHub]:
    with FakeGitHub() as server:
        yield server


@pytest.fixture
def repo(workspace: Path, remote: GitRemote) -> str:
    """The workspace as a checkout of `main` with one commit, which the remote has too; the commit's id."""
    (workspace / ".gitignore").write_text(".agent-run/\n")
    (workspace / "app.py").write_text("print('hello')\n")
    git(workspace, "init", "-q", "-b", "main")
    git(workspace, "add", "-A")
    git(workspace, "commit", "-qm", "start")
    git(workspace, "push", "-q", str(remote.bare), "main")
    return git(workspace, "rev-parse", "HEAD").strip()


def env_for(gh: FakeGitHub, **more: str) -> dict[str, str]:
    return {"GITHUB_TOKEN": TOKEN, "GITHUB_REPOSITORY": "octo/hello", "GITHUB_API_URL": gh.url,
            "GITHUB_SERVER_URL": "https://github.example", "GITHUB_RUN_ID": "77", **more}


def write(path: str, content: str, answer: str) -> list[Any]:
    """The agent reads the file (an IOError result when it is new), then writes it: `write` replaces only a file the
    run has read (issue 44)."""
    return [reply(calls=[("read", {"path": path}), ("write", {"path": path, "content": content})]), reply(answer)]


def no_token_in(*roots: Path) -> None:
    for root in roots:
        for path in root.rglob("*"):
            if path.is_file() and not path.is_symlink():
                data = path.read_bytes()
                assert TOKEN.encode() not in data, path


def test_land_pr_pushes_one_commit_opens_a_draft_and_a_rerun_updates_both(fake, agent_run, workspace, remote, gh,
                                                                          repo):
    (workspace / "task.md").write_text("# Fix the greeting, closes #3 for @bob\n\nSay hello to the world.\n")
    git(workspace, "add", "task.md")
    git(workspace, "commit", "-qm", "task")
    base = git(workspace, "rev-parse", "HEAD").strip()
    git(workspace, "push", "-q", str(remote.bare), "main")
    fake.add(*write("app.py", "print('hello, world')\n", "Greeted the world.\n\nFixes #12, thanks @alice."))
    args = ("--land", "pr", "--land-remote", remote.url, "--sandbox", "off", "task.md")
    r = agent_run(*args, env=env_for(gh))
    assert r.code == 0, r.stderr
    land = r.summary["land"]
    assert land["landed"] is True and land["branch"] == "agent-run/task" and land["base"] == "main", land
    assert r.summary["status"] == r.summary["run_status"] == "success"
    [event] = r.of_type("land")
    assert event["commit"] == land["commit"] and event["pull_request"] == land["pull_request"] and not event["reason"]
    assert [e["type"] for e in r.events][-2:] == ["land", "run_finished"]
    # one commit, exactly the run's change, on the HEAD recorded before the first tool call
    tip = remote.git("rev-parse", "refs/heads/agent-run/task").strip()
    assert tip == land["commit"] and remote.git("rev-parse", f"{tip}^").strip() == base
    assert remote.git("diff", "--name-only", base, tip).split() == ["app.py"]
    assert remote.git("log", "-1", "--format=%an <%ae>|%cn <%ce>", tip).strip() == f"{AUTHOR}|{AUTHOR}"
    message = remote.git("log", "-1", "--format=%B", tip)
    assert message.startswith("Fix the greeting, closes issue 3 for @\u200bbob\n\nGreeted the world.\n")
    assert f"Agent-Run-Id: {r.summary['run_id']}\nAgent-Run-Task: task.md\n" in message
    # one draft pull request with the marker; nothing it says closes or mentions anything
    [pr] = gh.pulls.values()
    assert pr["draft"] is True and pr["base"]["ref"] == "main" and pr["head"]["ref"] == "agent-run/task"
    assert pr["body"].startswith("<!-- agent-run:land:task.md -->") and "Fixes issue 12" in pr["body"]
    assert "@alice" not in pr["body"] and "actions/runs/77" in pr["body"]
    assert land["pull_request"] == {"number": pr["number"], "url": pr["html_url"]}
    # the token: only in the push's Authorization header, nowhere on disk
    assert all(auth for _, _, auth in remote.requests[1:]) and TOKEN not in r.stdout + r.stderr
    no_token_in(workspace / ".git", r.run_dir)
    assert "extraheader" not in (workspace / ".git" / "config").read_text()

    # a re-run (a fresh checkout of main): the change goes on agent-run's own tip, pushed fast-forward; the same
    # pull request is updated
    git(workspace, "checkout", "-q", "--", ".")
    fake.restart().add(*write("NOTES.md", "notes\n", "Added notes."))
    again = agent_run(*args, env=env_for(gh))
    assert again.code == 0, again.stderr
    tip2 = remote.git("rev-parse", "refs/heads/agent-run/task").strip()
    assert remote.git("rev-parse", f"{tip2}^").strip() == tip
    assert remote.git("diff", "--name-only", tip, tip2).split() == ["NOTES.md"]
    assert len(gh.pulls) == 1 and len(gh.of("POST", "/pulls$")) == 1 and gh.of("PATCH", r"/pulls/\d+$")
    assert gh.of("GET", "/pulls$")[-1].query == {"head": "octo:agent-run/task", "state": "open"}
    no_token_in(again.run_dir)

    # a resume of that run lands as it did: its runs' whole change (as the workspace holds it) on agent-run's tip
    fake.restart().add(*write("NOTES.md", "notes\nmore\n", "More notes."))
    resumed = agent_run("resume", str(again.run_dir), "add more", "--sandbox", "off", env=env_for(gh))
    assert resumed.code == 0 and resumed.summary["land"]["landed"], resumed.stderr
    tip3 = remote.git("rev-parse", "refs/heads/agent-run/task").strip()
    assert remote.git("rev-parse", f"{tip3}^").strip() == tip2 and resumed.summary["land"]["commit"] == tip3
    assert remote.git("diff", "--name-only", tip2, tip3).split() == ["NOTES.md"]
    assert remote.git("show", f"{tip3}:NOTES.md") == "notes\nmore\n" and len(gh.pulls) == 1

    # a re-run whose change conflicts with agent-run's own tip (the three-way apply): land_failed, the run's own
    # success kept, nothing pushed
    fake.restart().add(*write("app.py", "print('bye')\n", "Said bye."))
    r = agent_run(*args, env=env_for(gh))
    assert (r.code, r.summary["status"], r.summary["run_status"]) == (1, "land_failed", "success"), r.stderr
    assert "conflict" in r.summary["land"]["reason"] and r.of_type("run_finished")[0]["status"] == "land_failed"
    assert remote.git("rev-parse", "refs/heads/agent-run/task").strip() == tip3
    # a branch someone else moved (its tip is not agent-run's last commit for the key): refused, never force-pushed
    git(workspace, "checkout", "-q", "--", ".")
    theirs = remote.git("-c", "user.name=someone", "-c", "user.email=s@example.com", "commit-tree",
                        f"{tip3}^{{tree}}", "-p", tip3, "-m", "theirs").strip()
    remote.git("update-ref", "refs/heads/agent-run/task", theirs)
    fake.restart().add(*write("app.py", "print('bye')\n", "Said bye."))
    r = agent_run(*args, env=env_for(gh))
    assert (r.code, r.summary["status"]) == (1, "land_failed") and "moved by someone else" in r.summary["reason"]
    assert remote.git("rev-parse", "refs/heads/agent-run/task").strip() == theirs


def test_nothing_lands_unless_the_run_succeeded_with_a_change_it_may_publish(fake, agent_run, workspace, remote,
                                                                             gh, repo):
    run = ("--land", "branch", "--land-remote", remote.url, "--sandbox", "off")
    # an empty change: a notice, exit 0
    fake.add(reply("Nothing to do."))
    empty = agent_run(*run, "task.md", env=env_for(gh))
    assert empty.code == 0 and empty.summary["land"]["landed"] is False and "changed nothing" in empty.stderr
    # a resume keeps what the run recorded, and refuses another; batch refuses what it cannot land
    r = agent_run("resume", str(empty.run_dir), "go on", "--land", "pr", env=env_for(gh))
    assert r.code == 2 and "--land pr: the run lands with --land branch; a resume keeps it" in r.stderr
    for land, why in (("commit", "would stay in its own worktree"), ("pr", "needs each task in its own worktree")):
        r = agent_run("batch", "--land", land, "task.md", env=env_for(gh))
        assert r.code == 2 and why in r.stderr
    # a denied run lands nothing, and says so
    fake.restart().add(reply(calls=[("bash", {"command": "rm -rf /"})]), reply("tried"))
    r = agent_run(*run, "--policy", "strict", "task.md", env=env_for(gh))
    assert r.code == 3 and r.summary["land"]["reason"] == "nothing landed: the run ended denied"
    # a run whose check fails lands nothing
    (workspace.parent / "checked.md").write_text("---\ncheck: \"false\"\ncheck_attempts: 1\n---\nChange app.py.\n")
    fake.restart().add(*write("app.py", "print(0)\n", "Changed."))
    r = agent_run(*run, "--approve", "bash:shell:false", str(workspace.parent / "checked.md"), env=env_for(gh))
    assert r.code == 1 and r.summary["land"]["reason"] == "nothing landed: the run ended failed", r.stderr
    assert not remote.git("for-each-ref", "refs/heads/agent-run")
    git(workspace, "checkout", "-q", "--", ".")
    # a workflow change is refused, naming the file: land_failed, exit 1, the run's own success kept
    fake.restart().add(*write(".github/workflows/ci.yml", "on: push\n", "Changed CI."))
    r = agent_run(*run, "task.md", env=env_for(gh))
    assert (r.code, r.summary["status"], r.summary["run_status"]) == (1, "land_failed", "success"), r.stderr
    assert r.summary["land"]["refused"] == [".github/workflows/ci.yml"] and r.of_type("run_finished")[0][
        "status"] == "land_failed"
    # with --land-allow-workflows it lands; --land-ready opens a ready pull request; a model answer past GitHub's
    # 65,536 characters is cut in the body, which still ends with the files and the job; nothing closes or mentions
    (workspace / ".github" / "workflows" / "ci.yml").unlink()
    answer = ("Changed CI; fixes #12 for @alice, resolves GH-10, fixes https://github.com/octo/hello/issues/9.\n\n"
              "Then @bob said: closes octo/hello#8. " + "fix #7 " * 12_000)
    fake.restart().add(*write(".github/workflows/ci.yml", "on: push\n", answer))
    r = agent_run("--land", "pr", "--land-ready", "--land-allow-workflows", "--land-branch", "ci", "--land-remote",
                  remote.url, "--sandbox", "off", "task.md", env=env_for(gh))
    assert r.code == 0 and r.summary["land"]["landed"], r.stderr
    assert remote.git("show", "ci:.github/workflows/ci.yml") == "on: push\n"
    defused = "Changed CI; fixes issue 12 for @\u200balice, resolves issue 10, fixes issue https://github.com/octo/"
    assert f"\n\n{defused}" in remote.git("log", "-1", "--format=%B", "ci")
    [post] = gh.of("POST", "/pulls$")
    body = post.json["body"]
    assert post.json["draft"] is False and post.json["head"] == "ci" and len(body) <= 65_536 < len(answer)
    assert body.startswith("<!-- agent-run:land:task.md -->") and not re.search(r"#\d|@[a-z]", body)
    assert defused in body and "closes octo/hello issue 8" in body
    assert "The answer is cut here, at" in body and f"run `{r.summary['run_id']}`" in body
    assert body.endswith("Landed by agent-run from [the job run](https://github.example/octo/hello/actions/runs/77).\n")
    assert body.count("\n```\n") == 1 and "- `.github/workflows/ci.yml`" in body  # the fence closed
    git(workspace, "checkout", "-q", "--", ".")
    (workspace / ".github" / "workflows" / "ci.yml").unlink()
    # so is a change holding what the masker hides: changes.patch masks it, a commit would publish it
    fake.restart().add(*write("leak.txt", f"token={TOKEN}\n", "Saved it."))
    r = agent_run(*run, "task.md", env=env_for(gh))
    assert (r.code, r.summary["status"], r.summary["land"]["refused"]) == (1, "land_failed", ["leak.txt"]), r.stderr
    (workspace / "leak.txt").unlink()
    # a push the server rejects: the server's words, land_failed, exit 1
    remote.reject("GH006: Protected branch update failed")
    fake.restart().add(*write("app.py", "print(1)\n", "Done."))
    r = agent_run(*run, "task.md", env=env_for(gh))
    assert (r.code, r.summary["status"]) == (1, "land_failed") and "GH006" in r.summary["reason"], r.stderr
    assert not remote.git("for-each-ref", "refs/heads/agent-run")
    # refused before the run (exit 2): tracked changes at the start, a detached HEAD without --land-base
    r = agent_run(*run, "task.md", env=env_for(gh))
    assert r.code == 2 and "uncommitted changes" in r.summary["reason"] and not r.of_type("tool_call")
    git(workspace, "checkout", "-q", "--", ".")
    git(workspace, "checkout", "-q", "--detach")
    r = agent_run(*run, "task.md", env=env_for(gh))
    assert r.code == 2 and "--land-base" in r.summary["reason"]
    # and a remote that is not https (http only to 127.0.0.1), given or from GITHUB_SERVER_URL
    for remote_url, why in (("http://example.com/hello.git", "http only to 127.0.0.1"),
                            ("git@github.com:octo/hello.git", "not an https URL")):
        r = agent_run("--land", "branch", "--land-remote", remote_url, "task.md", env=env_for(gh))
        assert r.code == 2 and why in r.summary["reason"] and not r.of_type("tool_call"), r.stderr
    r = agent_run("--land", "branch", "task.md", env=env_for(gh, GITHUB_SERVER_URL="http://github.example"))
    assert r.code == 2 and "GITHUB_SERVER_URL and GITHUB_REPOSITORY 'http://github.example/octo/hello': http only" \
        in r.summary["reason"], r.stderr
    # --land commit: one commit on the current branch in the workspace, nothing pushed
    git(workspace, "checkout", "-q", "main")
    fake.restart().add(*write("app.py", "print(2)\n", "Committed."))
    r = agent_run("--land", "commit", "--sandbox", "off", "--commit-author", "Bot <bot@example.com>", "task.md",
                  env=env_for(gh))
    assert r.code == 0 and r.summary["land"]["landed"], r.stderr
    assert git(workspace, "rev-parse", "HEAD").strip() == r.summary["land"]["commit"]
    assert git(workspace, "log", "-1", "--format=%an <%ae>").strip() == "Bot <bot@example.com>"
    assert git(workspace, "status", "--porcelain").strip() == ""
    # a pushed branch whose pull request GitHub will not open: land_failed with GitHub's words and the compare URL
    (remote.bare / "hooks" / "pre-receive").unlink()
    gh.fail("POST", "/pulls$", (403, {}, {"message": "GitHub Actions is not permitted to create or approve pull "
                                                     "requests."}))
    fake.restart().add(*write("app.py", "print(3)\n", "Again."))
    r = agent_run("--land", "pr", "--land-remote", remote.url, "--sandbox", "off", "task.md", env=env_for(gh))
    assert (r.code, r.summary["status"]) == (1, "land_failed") and "not permitted" in r.summary["reason"]
    assert "https://github.example/octo/hello/compare/main...agent-run/task?expand=1" in r.summary["reason"]
    assert remote.git("rev-parse", "agent-run/task").strip() == r.summary["land"]["commit"]


def test_github_respond_lands_where_it_was_asked(fake, agent_run, workspace, remote, gh, repo, tmp_path):
    gh.permissions["alice"] = "admin"

    def respond(payload: dict[str, Any], event: str = "issue_comment") -> Any:
        env = {**job_env(gh, tmp_path, event, payload), "GITHUB_SERVER_URL": "https://github.example"}
        return agent_run("github", "respond", "--land", "pr", "--land-remote", remote.url, "--sandbox", "off",
                         env=env)

    # on an issue: a pull request that closes it, linked from the sticky comment
    fake.add(*write("app.py", "print('fixed')\n", "Fixed it."))
    r = respond(payloads.issue_comment("@agent-run please fix the greeting"))
    assert r.code == 0, r.stderr
    [pr] = gh.pulls.values()
    assert pr["head"]["ref"] == "agent-run/issue-comment-90001" and "\nCloses #5\n" in pr["body"]
    assert pr["body"].startswith("<!-- agent-run:land:issue-comment-90001 -->")
    [sticky] = [c for c in gh.on(5) if "<!-- agent-run:" in c["body"]]
    assert f"[#{pr['number']}]({pr['html_url']})" in sticky["body"] and "nothing was pushed" not in sticky["body"]
    no_token_in(workspace / ".git", r.run_dir)
    # on a pull request of this repository: the commit goes onto its head branch, no pull request is opened
    git(workspace, "checkout", "-q", "--", ".")
    git(workspace, "push", "-q", str(remote.bare), "main:retry")
    gh.heads[7] = repo
    fake.restart().add(*write("app.py", "print('retried')\n", "Retried."))
    r = respond(payloads.issue_comment("@agent-run retry it", number=7, pr=True, comment_id=90002))
    assert r.code == 0 and r.summary["land"]["branch"] == "retry", r.stderr
    assert remote.git("rev-parse", "refs/heads/retry").strip() == r.summary["land"]["commit"]
    assert remote.git("rev-parse", "retry^").strip() == repo and len(gh.pulls) == 1
    # on a fork's pull request: skipped before the run (only --fork-review answers one, and never lands)
    gh.heads[8] = repo
    gh.forks.add(8)
    r = respond(payloads.issue_comment("@agent-run retry it", number=8, pr=True, comment_id=90003))
    assert r.code == 0 and "skipped" in r.stderr and "comes from a fork" in r.stderr and not r.new_dirs


def test_batch_lands_each_task_on_its_own_branch_from_its_own_worktree(fake, agent_run, workspace, remote, gh, repo):
    for i in range(2):
        (workspace / f"t{i}.md").write_text(f"Put version {i} into shared.txt.\n")
        fake.route(f"version {i}", *write("shared.txt", f"version {i}\n", f"wrote version {i}"))
    r = agent_run("batch", "-j", "2", "--land", "branch", "--land-remote", remote.url, "--sandbox", "off", "t0.md",
                  "t1.md", env=env_for(gh), timeout=600)
    assert r.code == 0, r.stdout + r.stderr
    for i in range(2):
        tip = remote.git("rev-parse", f"refs/heads/agent-run/t{i}").strip()
        assert remote.git("rev-parse", f"{tip}^").strip() == repo
        assert remote.git("show", f"{tip}:shared.txt") == f"version {i}\n"
    assert git(workspace, "status", "--porcelain", "--untracked-files=no").strip() == ""  # the workspace untouched
