"""Bytes that are not UTF-8 in paths (issue 26, item 3): a workspace path that is not UTF-8 is refused before
any run directory exists; a file name inside the workspace that is not UTF-8 is shown as `\\xNN` in tool
results, events and the transcript; and the recorder's last resort survives any exception (a summary, the
lock released, no gap in `seq`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.conftest import clean_env
from tests.fakes.openai_server import reply

HANG_S = 60


def test_a_workspace_path_that_is_not_utf8_is_refused_before_any_run_directory(fake, tmp_path, agent_run):
    bad = os.fsdecode(os.fsencode(tmp_path) + b"/ws\xff")  # surrogateescape'd, as Python hands argv over
    os.mkdir(bad)
    with open(os.path.join(bad, "task.md"), "w") as f:
        f.write("Do the thing.\n")
    r = agent_run("--workspace", bad, os.path.join(bad, "task.md"), timeout=HANG_S)
    assert r.code == 2, r.stderr
    assert "workspace" in r.stderr and "ws\\xff is not valid UTF-8" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and not os.path.exists(os.path.join(bad, ".agent-run")) and not fake.requests


def test_resume_and_replay_into_a_workspace_path_that_is_not_utf8_are_refused(fake, workspace, agent_run, tmp_path):
    fake.add(reply(calls=[("bash", {"command": "make"})]), reply("stopped"))
    first = agent_run("--policy", "strict", "task.md", timeout=HANG_S)
    assert first.code == 3, first.stderr
    bad = os.fsdecode(os.fsencode(tmp_path) + b"/other\xff")
    os.mkdir(bad)
    for args in (("resume", str(first.run_dir)), ("replay", str(first.run_dir), "--approve")):
        r = agent_run(*args, "--workspace", bad, timeout=HANG_S)
        assert r.code == 2 and "other\\xff is not valid UTF-8" in r.stderr, r.stderr
        assert "Traceback" not in r.stderr and r.new_dirs == [] and os.listdir(bad) == []


def test_a_file_name_that_is_not_utf8_is_shown_as_escapes(fake, workspace, agent_run):
    (workspace / os.fsdecode(b"caf\xe9.txt")).write_text("hello there\n")
    fake.add(reply(calls=[("list", {}), ("glob", {"pattern": "*.txt"}), ("grep", {"pattern": "hello"}),
                          ("read", {"path": "caf\\xe9.txt"})]),
             reply("listed"))
    r = agent_run("task.md", timeout=HANG_S)
    assert r.code == 0, r.stderr
    results = {e["tool"]: e for e in r.of_type("tool_result")}  # events.jsonl parses (and matches its schema)
    for tool in ("list", "glob", "grep"):
        assert results[tool]["ok"] and "caf\\xe9.txt" in results[tool]["content"], results[tool]
    error = json.loads(results["read"]["content"])["error"]  # names the path as the model gave it
    assert error["type"] == "IOError" and "caf\\xe9.txt" in error["message"], error
    sent = json.dumps(fake.requests[1]["messages"])  # the request the model got is valid UTF-8 JSON
    assert "caf\\\\xe9.txt" in sent and "\\udce9" not in sent
    assert r.summary["status"] == "success"
    assert "caf\\xe9.txt" in (r.run_dir / "transcript.md").read_text(encoding="utf-8")


# The run through the real CLI entry point, with two faults injected: the event log cannot encode the
# run_started event (a record that was never written), and building the summary raises.
_FAULTS = """
import sys
import runner.engine.recorder as recorder
import runner.record.rundir as rundir
from runner.cli.main import main

canonical = rundir.canonical
def broken(record):
    if record.get("type") == "run_started":
        raise TypeError("cannot encode this event")
    return canonical(record)
rundir.canonical = broken
def summary_fails(*args, **kwargs):
    raise ValueError("no summary today: caf\\udce9")
recorder.commands_for = summary_fails
try:
    main(sys.argv[1:])
except SystemExit as exc:
    sys.exit(exc.code)
"""


def test_the_recorders_last_resort_survives_any_exception(fake, workspace):
    fake.add(reply("never asked"))
    env = clean_env(OPENAI_BASE_URL=fake.base_url, OPENAI_API_KEY="sk-test")
    proc = subprocess.run([sys.executable, "-c", _FAULTS, "task.md"], cwd=workspace, env=env, capture_output=True,
                          text=True, timeout=HANG_S)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    (run_dir,) = (workspace / ".agent-run" / "runs").iterdir()
    summary = json.loads((run_dir / "summary.json").read_bytes().decode("ascii"))
    assert summary["status"] == "failed" and summary["exit_code"] == 1
    assert "internal error: TypeError: cannot encode this event" in summary["reason"]
    assert "could not be completed: ValueError: no summary today: caf\\udce9" in summary["reason"]
    assert not (run_dir / ".lock").exists()
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert events[-1]["type"] == "run_finished" and events[-1]["status"] == "failed"
