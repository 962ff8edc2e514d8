"""Two backtracking greps at once (the faults issue's items 1 and 2; the one-agent issue's one way to stop), through
the real CLI. Beside each other the greps run on worker threads, where no signal handler runs: they stop because
they ask the run's Cancel (its stop, and its wall-clock deadline) between slices of matching.

- A CI cancel (SIGINT, then SIGTERM): the group waited up to 30 s for calls that never looked at the stop, so
  GitHub's SIGTERM 7.5 s later killed the run with no summary. Now the stop reaches both greps, the group lets go of
  what has not stopped within a second, and the record is complete (`interrupted`, `run_finished`, sealed) before
  the second signal, which then changes nothing: exit 130.
- `--timeout`: the `regex` module's timeout counts the process's CPU seconds, so a grep beside another stopped late
  on a loaded machine (18 s for `--timeout 8`; bench/bench_cancel.py measures it) or early on an idle one, saying
  the time was up while it was not. Now both stop at the run's wall clock and end as one grep alone does: each
  result says the run's time is up, then exit 5.

The cancel's files are thousands of lines that each backtrack for a tenth of a second or so (minutes of matching
in all, no single search long enough to end on its own timeout); the deadline's, one line that backtracks for hours
(`(a|aa)+$` on sixty a's and a b), whose one search the regex module bounds only in CPU seconds."""

from __future__ import annotations

import json
import signal
from pathlib import Path

from runner.record.integrity import verify
from tests.cli.test_replay_and_signals import _wait_for_event
from tests.cli.test_sighup import start
from tests.fakes.audit import audit_of
from tests.fakes.openai_server import reply
from tests.fakes.wait import until

PATTERN = "(a|aa)+$"  # backtracks on a run of a's that ends in something else; no literal: no ripgrep prefilter
HANG_CAP_S = 120  # stops a hang, never a timing assertion
# Bounds a hang too: before, the group waited up to 30 s for calls that did not stop (GitHub sends its SIGTERM
# 7.5 s after the SIGINT).
STOP_CAP_S = 20


def _backtracking_files(workspace: Path, line: str = "a" * 25 + "b\n", lines: int = 4000) -> list[tuple[str, dict]]:
    """Two files of `lines` lines that backtrack (by default ~0.1 s each); a grep call for each."""
    for name in ("a.txt", "b.txt"):
        (workspace / name).write_text(line * lines, encoding="utf-8")
    return [("grep", {"pattern": PATTERN, "path": "a.txt"}), ("grep", {"pattern": PATTERN, "path": "b.txt"})]


def _events(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "events.jsonl").read_text(encoding="utf-8").splitlines()]


def _both_decided(run_dir: Path) -> bool:
    """Both greps recorded and allowed: the group's calls are starting (or running)."""
    text = (run_dir / "events.jsonl").read_text(encoding="utf-8")
    return text.count('"type":"permission_decision"') >= 2


def test_a_ci_cancel_during_two_backtracking_greps_ends_130_with_the_whole_record(fake, workspace, agent_run_zygote):
    fake.add(reply(calls=_backtracking_files(workspace)), reply("unreachable"))
    proc = start(agent_run_zygote, fake, workspace, "--timeout", "600", "task.md")
    try:
        run_dir = _wait_for_event(workspace, "tool_call")
        until(lambda: _both_decided(run_dir), "both greps to be decided")
        proc.send_signal(signal.SIGINT)
        until(lambda: '"type":"interrupted"' in (run_dir / "events.jsonl").read_text(encoding="utf-8"),
              "the interrupted event", timeout_s=STOP_CAP_S)
        proc.send_signal(signal.SIGTERM)  # GitHub's second signal: the record is already complete
        _, err = proc.communicate(timeout=HANG_CAP_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, err
    summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    assert (summary["status"], summary["exit_code"], summary["signal"]) == ("interrupted", 130, "SIGINT")
    events = _events(run_dir)
    assert [e["tool"] for e in events if e["type"] == "tool_call"] == ["grep", "grep"]
    assert (events[-1]["type"], events[-1]["exit_code"]) == ("run_finished", 130)
    assert events[-2]["type"] == "interrupted" and events[-2]["signal"] == "SIGINT"
    assert verify(run_dir) is not None  # sealed: the chain and summary.json's integrity hold
    assert {r["outcome"] for r in audit_of(run_dir)} == {"interrupted"}  # one line per call, each interrupted


def test_two_backtracking_greps_at_once_stop_at_the_runs_wall_clock(fake, workspace, agent_run):
    fake.add(reply(calls=_backtracking_files(workspace, "a" * 60 + "b\n", 1)), reply("done"))
    r = agent_run("--timeout", "4", "task.md", timeout=HANG_CAP_S)
    # As a run whose one grep is stopped by its deadline ends (tests/cli/test_tool_deadlines.py): each grep's result
    # says the run's time is up, then the run ends on its clock (exit 5, the time budget), the model never asked again
    # (a grep whose CPU-second timeout ran out early, with two threads busy, said the time was up while it was not).
    assert r.code == 5, r.stderr
    summary = r.summary
    assert (summary["status"], summary["budget"]["name"]) == ("budget_exhausted", "timeout_s")
    assert r.events[-1]["type"] == "run_finished" and r.events[-1]["reason"] == summary["reason"]
    assert summary["reason"] == "run timeout reached (4.0s) before the model finished"
    results = r.of_type("tool_result")
    assert [(e["tool"], e["details"].get("stopped")) for e in results] == [("grep", "the run's time is up")] * 2
    assert [e["turn"] for e in r.of_type("model_request")] == [1]
