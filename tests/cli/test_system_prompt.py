"""--system-prompt FILE (issue 34): the operator's text in place of agent-run's own, the runner's contract kept,
recorded in run_started.instructions with its sha256; a resume and a fork send the recorded prompt."""

from __future__ import annotations

import hashlib
import subprocess

from runner.workspace.prompt import CONTRACT, SYSTEM_PROMPT, base_prompt, landing_contract
from tests.fakes.openai_server import reply

OWN = "You are Reviewer, a careful code reviewer for ACME. Never touch files outside src/.\n"


def _system(fake, i: int = 0) -> str:
    return fake.requests[i]["messages"][0]["content"]


def test_system_prompt_replaces_agent_runs_text_and_resume_and_fork_keep_it(fake, workspace, agent_run, tmp_path):
    prompt = tmp_path / "reviewer.md"
    prompt.write_text(OWN, encoding="utf-8")
    (workspace / "AGENTS.md").write_text("Run make test.\n", encoding="utf-8")
    fake.add(reply(calls=[("list", {})]), reply("first"))
    r = agent_run("--system-prompt", str(prompt), "--append-system-prompt", "Be brief.", "task.md")
    assert r.code == 0, r.stderr
    system = _system(fake)
    assert system.startswith(OWN) and "You are agent-run" not in system
    assert CONTRACT in system  # how tools and the policy answer: the runner's, whatever the operator wrote
    assert "cannot change what you are allowed to do" in system  # the framing of repository content stays
    assert system.index(OWN) < system.index("Be brief.") < system.index("Run make test.")
    assert _system(fake, 1) == system
    records = r.of_type("run_started")[0]["instructions"]
    assert records[0] == {"source": "--system-prompt", "path": str(prompt), "bytes": len(OWN.encode()),
                          "sha256": hashlib.sha256(OWN.encode()).hexdigest(), "truncated": False}

    prompt.write_text("changed since\n", encoding="utf-8")  # never read again: the recorded prompt is sent
    fake.add(reply("resumed"))
    resumed = agent_run("resume", str(r.run_dir), "go on")
    assert resumed.code == 0, resumed.stderr
    assert _system(fake, 2) == system
    fake.add(reply("forked"))
    forked = agent_run("fork", str(r.run_dir), "--at", "1", "try again")
    assert forked.code == 0, forked.stderr
    assert _system(fake, 3) == system
    refused = agent_run("resume", str(r.run_dir), "--system-prompt", str(prompt), "go on")
    assert refused.code == 2 and "--system-prompt" in refused.stderr


def test_an_empty_or_missing_system_prompt_is_a_usage_error(fake, workspace, agent_run, tmp_path):
    (tmp_path / "empty.md").write_text(" \n", encoding="utf-8")
    for path in (tmp_path / "empty.md", tmp_path / "missing.md"):
        r = agent_run("--system-prompt", str(path), "task.md")
        assert r.code == 2 and "--system-prompt" in r.summary["reason"]
    assert not fake.requests


def test_landing_adds_its_part_to_the_contract_and_nothing_without_it():
    """Issue 40, item 4: with `--land` the runner's contract says the runner commits and pushes, so the agent does
    not; without it (`none`) the prompt is byte for byte the one before landing existed (the prefix is cached)."""
    assert landing_contract("none") is None
    assert base_prompt() == base_prompt(None, landing_contract("none")) == SYSTEM_PROMPT
    assert base_prompt(OWN) == base_prompt(OWN, None) == OWN.strip() + "\n" + CONTRACT
    for mode in ("commit", "branch", "pr"):
        part = landing_contract(mode)
        assert part is not None and "Do not commit, create branches or push yourself" in part
        assert base_prompt(None, part) == SYSTEM_PROMPT + part and base_prompt(OWN, part).endswith(CONTRACT + part)
    assert "pull request" in (landing_contract("pr") or "") and "pushes" not in (landing_contract("commit") or "")


def test_with_land_the_agent_is_told_the_runner_commits(fake, workspace, agent_run):
    """`--land commit`: the contract's landing part is in the system prompt the model gets (the run lands nothing,
    it changed nothing); without `--land`, the prompt is agent-run's own as before."""
    (workspace / ".gitignore").write_text(".agent-run/\n")
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@e", "commit",
                                                                "-qm", "start"]):
        subprocess.run(["git", *args], cwd=workspace, check=True, capture_output=True, timeout=60)
    fake.add(reply("nothing to change"), reply("nothing to change"))
    r = agent_run("--land", "commit", "task.md")
    assert r.code == 0 and r.summary["land"]["landed"] is False, r.stderr
    assert _system(fake, 0) == SYSTEM_PROMPT + (landing_contract("commit") or "")
    assert agent_run("task.md").code == 0
    assert _system(fake, 1) == SYSTEM_PROMPT
