"""`agent-run batch` and its tasks' ends: SIGHUP to the batch is passed on to every running task (each
records its interrupt, exit 129); a task killed before it printed its summary keeps its run directory in
batch.json (learnt when the run made it, runner/record/announce.py), and that run can be resumed."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

from tests.cli.test_sighup import start
from tests.fakes.openai_server import hang, reply
from tests.fakes.wait import HANG_S, until


def _task(workspace: Path) -> str:
    (workspace / "t0.md").write_text("Task zero: look around.\n")
    return "t0.md"


def _children(pid: int) -> list[int]:
    """The processes `pid` started (from every one of its threads: the batch starts tasks from a pool)."""
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except OSError:  # the thread ended meanwhile
            continue
    return found


def test_sighup_to_the_batch_is_passed_on_to_its_running_task(fake, workspace, agent_run_zygote):
    fake.route("Task zero", hang(600), reply("late"))  # answers only once the test is over
    proc = start(agent_run_zygote, fake, workspace, "batch", _task(workspace))
    until(lambda: fake.requests, "the task to ask the model")
    proc.send_signal(signal.SIGHUP)
    out, err = proc.communicate(timeout=HANG_S)
    assert proc.returncode == 129, out + err
    [entry] = json.loads((workspace / ".agent-run" / "runs" / "batch.json").read_text())["tasks"]
    assert (entry["status"], entry["exit_code"]) == ("interrupted", 129)
    run_dir = Path(entry["run_dir"])
    summary = json.loads((run_dir / "summary.json").read_text())
    assert (summary["status"], summary["signal"]) == ("interrupted", "SIGHUP")
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    assert [(e["type"], e.get("signal")) for e in events[-2:]] == [("interrupted", "SIGHUP"), ("run_finished", None)]


def test_a_killed_task_keeps_its_run_dir_and_can_be_resumed(fake, workspace, agent_run_zygote, agent_run):
    fake.route("Task zero", hang(600), reply("resumed, and done"))
    proc = start(agent_run_zygote, fake, workspace, "batch", _task(workspace))
    runs = workspace / ".agent-run" / "runs"
    until(lambda: fake.requests, "the task to ask the model")
    run_dir = until(lambda: next((p for p in runs.iterdir() if p.is_dir()), None), "the task's run directory")
    [child] = until(lambda: _children(proc.pid), "the task's process")
    os.kill(child, signal.SIGKILL)  # as the OOM killer would: no summary, nothing printed
    out, err = proc.communicate(timeout=HANG_S)
    assert proc.returncode == 137, out + err
    [entry] = json.loads((runs / "batch.json").read_text())["tasks"]
    assert (entry["status"], entry["exit_code"]) == ("failed", 137)
    assert (entry["run_dir"], entry["run_id"]) == (str(run_dir), run_dir.name)
    assert "killed by SIGKILL" in entry["reason"]
    assert not (run_dir / "summary.json").exists()
    lines = (run_dir / "events.jsonl").read_text().splitlines()
    assert json.loads(lines[0])["type"] == "run_started" and all(json.loads(line) for line in lines)
    resumed = agent_run("resume", entry["run_dir"])
    assert resumed.code == 0, resumed.stderr
    assert resumed.summary["resumed_from"]["run_id"] == run_dir.name and resumed.summary["signal"] is None
    assert resumed.summary["answer"] == "resumed, and done"
