"""Bytes that are not UTF-8 in paths (issue 26, item 3): a workspace path that is not UTF-8 is refused before
any run directory exists; a file name inside the workspace that is not UTF-8 is shown as `\\xNN` in tool
results, events and the transcript; and the recorder's last resort survives any exception (a summary, the
lock released, no gap in `seq`)."""

from __future__ import annotations

import hashlib
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


# A batch's task file whose name is not UTF-8 (issue 42, item 8): the shard rule orders, hashes and records the
# names as the records show them (`\xNN`), which is all `batch-merge` has of them.
BAD_TASK = os.fsdecode(b"t\xff.md")


def test_batch_shards_with_a_task_name_that_is_not_utf8_run_and_merge(fake, workspace, agent_run, tmp_path):
    (workspace / BAD_TASK).write_text("Task [bad]: do it.\n")
    (workspace / "ok.md").write_text("Task [ok]: do it.\n")
    fake.route("[ok]", reply("done ok"))
    out = tmp_path / "shard-1"  # one shard of one: the rule's order and hash without a second batch process
    r = agent_run("batch", "--shard", "1/1", "-j", "2", "--shared-workspace", BAD_TASK, "ok.md",
                  "--runs-dir", str(out), timeout=HANG_S)
    shard = json.loads((out / "batch.json").read_text(encoding="utf-8"))
    # sorted as shown: "ok.md" < "t\xff.md"; the run refuses a task path that is not UTF-8 (exit 2)
    assert [t["task"] for t in shard["tasks"]] == ["ok.md", "t\\xff.md"], r.stderr
    assert r.code == 2 and "Traceback" not in r.stderr
    assert "t\\xff.md" in r.stdout and "is not valid UTF-8" in shard["tasks"][1]["reason"]
    m = agent_run("batch-merge", str(out), "--out", str(tmp_path / "merged"), timeout=HANG_S)
    assert m.code == 2, m.stderr
    merged = json.loads((tmp_path / "merged" / "batch.json").read_text(encoding="utf-8"))
    assert [(t["task"], t["shard"], t["exit_code"]) for t in merged["tasks"]] == [("ok.md", 1, 0), ("t\\xff.md", 1, 2)]
    assert "t\\xff.md" in m.stdout and "t\\xff.md" in (tmp_path / "merged" / "junit.xml").read_text(encoding="utf-8")


def test_batch_merge_of_shards_whose_task_names_hold_surrogates(fake, workspace, agent_run, tmp_path):
    # A shard's batch.json is untrusted input: a task named with a JSON escape of a lone surrogate, in a shard
    # directory whose own name is not UTF-8, is merged under the name the records show.
    order = ["ok.md", "t\\xff.md"]
    digest = hashlib.sha256(json.dumps(order, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    dirs = []
    for index, task in ((1, "ok.md"), (2, "t\udcff.md")):
        d = os.fsdecode(os.fsencode(tmp_path) + b"/shard-\xff%d" % index)
        os.mkdir(d)
        with open(os.path.join(d, "batch.json"), "w", encoding="ascii") as f:  # json.dumps: `\udcff` escaped
            json.dump({"exit_code": 0, "shard": {"index": index, "total": 2, "tasks_sha256": digest},
                       "tasks": [{"task": task, "status": "success", "exit_code": 0}]}, f)
        dirs.append(d)
    m = agent_run("batch-merge", *dirs, "--out", str(tmp_path / "merged"), timeout=HANG_S)
    assert m.code == 0, m.stderr
    merged = json.loads((tmp_path / "merged" / "batch.json").read_text(encoding="utf-8"))
    assert [t["task"] for t in merged["tasks"]] == order
    assert [r["dir"] for r in merged["shards"]["reported"]] == [f"{tmp_path}/shard-\\xff{i}" for i in (1, 2)]
