"""No false success from the sandbox (issue 40, item 3), through the real CLI and the real bubblewrap: a command the
policy allows that the sandbox's read-only `.git` refuses is recorded (a `sandbox_blocked` warning naming the call
and the path), shown in summary.json, the step summary and an annotation, and the model is told the runner lands
changes; the exit code stays what the run's ending makes it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.fakes.openai_server import reply

POLICY = {"extends": "ci", "permission": {"rules": [
    {"domain": "bash", "pattern": "shell:git add *", "decision": "allow"},
    {"domain": "bash", "pattern": "shell:git commit *", "decision": "allow"},
]}}


def _repository(ws: Path) -> None:
    commit = ["-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "i"]
    for args in (["init", "-q"], ["add", "task.md"], commit):
        subprocess.run(["git", *args], cwd=ws, check=True, capture_output=True, timeout=60)


@pytest.mark.usefixtures("sandbox_available")
def test_a_commit_the_sandbox_refuses_is_recorded_and_the_model_told(fake, workspace, agent_run, tmp_path):
    _repository(workspace)
    (workspace / "fix.txt").write_text("fixed\n")
    policy = tmp_path / "p.jsonc"
    policy.write_text(json.dumps(POLICY))
    fake.add(reply(calls=[("bash", {"command": "git add -A && git commit -m x"})]), reply("Committed the fix."))
    step = tmp_path / "step.md"
    r = agent_run("--policy", str(policy), "task.md",
                  env={"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(step)})
    assert r.code == 0 and r.summary["status"] == "success", r.stderr  # the ending decides the exit code, as before
    [result] = r.of_type("tool_result")
    error = json.loads(result["content"])["error"]
    assert (error["type"], error["exit_code"]) == ("ExitNonZero", 128)
    assert "Read-only file system" in error["output"]
    assert "runner lands" in error["sandbox"] and "--land" in error["sandbox"]
    [warning] = r.of_type("warning")
    assert warning["code"] == "sandbox_blocked"
    call_id = r.of_type("tool_call")[0]["call_id"]
    assert warning["message"].startswith(f"call {call_id}: .git/index.lock is on a read-only mount of the sandbox "
                                         "(.git)"), warning
    assert [w for w in r.summary["warnings"] if w.startswith("sandbox_blocked: ")] == [
        f"sandbox_blocked: {warning['message']}"]
    assert "Blocked by the sandbox (1)" in step.read_text() and ".git/index.lock" in step.read_text()
    assert f"::warning title=agent-run%3A blocked by the sandbox::call {call_id}: .git/index.lock" in r.stderr
    assert "agent-run: warning: sandbox_blocked" not in r.stderr  # on GitHub: the annotation says it
    fake.add(reply(calls=[("bash", {"command": "git add -A && git commit -m x"})]), reply("Committed the fix."))
    plain = agent_run("--policy", str(policy), "task.md")
    assert plain.code == 0, plain.stderr
    again = plain.of_type("tool_call")[0]["call_id"]
    assert f"agent-run: warning: sandbox_blocked: call {again}: .git/index.lock is on a read-only" in plain.stderr
    # Nothing was committed: the repository is as it was.
    log = subprocess.run(["git", "log", "--oneline"], cwd=workspace, capture_output=True, text=True, timeout=60)
    assert len(log.stdout.splitlines()) == 1


@pytest.mark.usefixtures("sandbox_available")
def test_a_failure_that_is_not_the_sandbox_is_no_warning(fake, workspace, agent_run, tmp_path):
    """A command failing for its own reasons that prints the words about a writable path records nothing more."""
    _repository(workspace)
    said = "echo \"touch: cannot touch './out': Read-only file system\" && false"
    fake.add(reply(calls=[("bash", {"command": said})]), reply("done"))
    r = agent_run("--approve", "bash:shell:echo *", "--approve", "bash:shell:false", "task.md")
    assert r.code == 0, r.stderr
    assert r.of_type("warning") == []
    assert "sandbox" not in json.loads(r.of_type("tool_result")[0]["content"])["error"]
