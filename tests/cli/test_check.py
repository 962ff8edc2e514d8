"""The task's `check:` is the runner's own call (runner/run/check.py), through the CLI: outside the guards and
the tool-call count, recorded as check_started / check_finished, kept out of the agent's changes; a denied
check is still replayed."""

from __future__ import annotations

import json
import shlex
import subprocess

from tests.fakes.openai_server import reply

FAILING = "sh check.sh"


def _git(workspace, *args):
    subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=t", *args], cwd=workspace, check=True,
                   capture_output=True)


def test_a_check_failing_like_the_agents_own_calls_ends_failed_not_doom_loop(fake, workspace, agent_run):
    # The model ran the check's command twice with the same failure: the check failing the same way once more
    # was the loop guard's third identical failure (exit 4, no check record). Each of its 3 attempts (the default
    # --check-attempts) fails the same way again, and the model's answers after them do not change that.
    (workspace / "check.sh").write_text("i=0; while [ $i -lt 80 ]; do echo line $i; i=$((i+1)); done\n"
                                        "echo 'FAILED test_x'; exit 1\n")
    (workspace / "t.md").write_text(f"---\ncheck: {FAILING}\n---\nMake the check pass.\n")
    again = reply(calls=[("bash", {"command": FAILING})])
    fake.add(again, again, *[reply("I could not fix it")] * 3)
    r = agent_run("--approve", f"bash:shell:{FAILING}", "t.md")
    assert r.code == 1, r.stderr
    s = r.summary
    assert s["status"] == "failed"
    assert s["reason"] == f"the check `{FAILING}` failed (ExitNonZero, exit code 1) after 3 attempts"
    check = {k: v for k, v in s["check"].items() if k != "attempts"}  # the last attempt's
    assert [a["attempt"] for a in s["check"]["attempts"]] == [1, 2, 3]
    assert (check["command"], check["ok"], check["error_type"], check["exit_code"]) == (FAILING, False,
                                                                                          "ExitNonZero", 1)
    assert isinstance(check["duration_s"], float) and check["duration_s"] >= 0
    assert check["output_tail"].endswith("line 79\nFAILED test_x") and "line 0\n" not in check["output_tail"]
    whole = (r.run_dir / check["output_path"]).read_text()
    assert whole.startswith("line 0\n") and whole.endswith("FAILED test_x\n")
    assert s["tool_calls"] == 2
    assert [e["call_id"] for e in r.of_type("tool_call")] == ["call_1_0", "call_2_0"]
    assert not [e for e in r.of_type("tool_result") if e["call_id"] == "check"]
    started = r.of_type("check_started")
    *_, finished = r.of_type("check_finished")
    assert [(e["call_id"], e["command"], e["attempt"]) for e in started] == [("check", FAILING, i) for i in (1, 2, 3)]
    assert {k: finished[k] for k in check} == check
    types = [e["type"] for e in r.events]
    assert types.index("check_started") < types.index("check_finished") < types.index("run_finished")
    assert not r.of_type("guard_warning") or all(e["call_id"] != "check" for e in r.of_type("guard_warning"))
    # The readers show it: the transcript and `runs show`.
    transcript = (r.run_dir / "transcript.md").read_text()
    assert "## Check" in transcript and "FAILED test_x" in transcript and check["output_path"] in transcript
    shown = agent_run("runs", "show", str(r.run_dir))
    assert shown.code == 0 and "check" in shown.stdout and FAILING in shown.stdout


def test_a_denied_check_exits_3_and_its_replay_runs_it(fake, workspace, agent_run):
    (workspace / "t.md").write_text("---\ncheck: echo checked > checked.txt\n---\nx\n")
    fake.add(reply("done"))
    r = agent_run("t.md")
    assert r.code == 3, r.stderr
    assert "not allowed by the policy" in r.summary["reason"]
    denial, = r.summary["denials"]
    assert denial["call_id"] == "check" and denial["command"] == "echo checked > checked.txt"
    assert r.summary["check"]["error_type"] == "ApprovalRequired" and r.summary["tool_calls"] == 0
    assert not r.of_type("tool_call") and r.of_type("check_finished")[0]["ok"] is False
    assert [e["call_id"] for e in r.of_type("permission_decision")] == ["check"]
    assert not (workspace / "checked.txt").exists()

    argv = shlex.split(denial["replay"])
    replayed = agent_run(*argv[1:])
    assert replayed.code == 0, replayed.stderr
    assert (workspace / "checked.txt").read_text() == "checked\n"
    assert replayed.summary["check"]["ok"] is True and replayed.summary["approved_calls"] == ["check"]
    assert replayed.of_type("check_finished")[0]["ok"] is True and not replayed.of_type("tool_call")
    assert len(fake.requests) == 1


def test_the_checks_own_writes_are_not_the_agents_changes(fake, workspace, agent_run):
    (workspace / "check.sh").write_text("mkdir -p __pycache__ && echo pyc > __pycache__/x.cpython-311.pyc\n"
                                        "echo report > report.txt\n")
    _git(workspace, "init", "-q")
    _git(workspace, "add", "check.sh", "task.md")
    _git(workspace, "commit", "-qm", "init")
    (workspace / "t.md").write_text(f"---\ncheck: {FAILING}\n---\nWrite a.txt\n")
    fake.add(reply(calls=[("write", {"path": "a.txt", "content": "agent\n"})]), reply("wrote it"))
    r = agent_run("--approve", f"bash:shell:{FAILING}", "t.md")
    assert r.code == 0, r.stderr
    assert r.summary["check"]["ok"] is True and (workspace / "report.txt").is_file()
    assert r.summary["changed_files"] == ["a.txt"]
    patch = (r.run_dir / "changes.patch").read_text()
    assert "+agent" in patch and "report" not in patch and "__pycache__" not in patch
    assert list(json.loads((r.run_dir / "workspace.json").read_text())["files"]) == ["a.txt"]

