"""The one fold of a run's events (runner/report/summary.py): over the log read back (runner/record/logged.py) it
says what the live fold wrote in summary.json; `so_far` is what `runs list|show` show of a run without one."""

from __future__ import annotations

import json
from pathlib import Path

from runner.core.events import RunFinished, SubagentFinished, SubagentStarted, ToolCall, tag
from runner.record.logged import parse_event, read_log
from runner.report.summary import fold
from tests.cli.test_runs_agents import _run_with_a_child

ROOT = Path(__file__).resolve().parents[2]
COUNTED = ("prompt_tokens", "completion_tokens", "cached_tokens")


def _same_as_summary(run_dir: Path) -> None:
    summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    facts = fold((logged.event for logged in read_log(run_dir / "events.jsonl")), run_dir.name)
    built = facts.build(status="x", exit_code=0, reason=None, duration_s=0, answer=None)
    assert (built["turns"], built["tool_calls"], built["denials"], built["loop_warnings"]) == (
        summary["turns"], summary["tool_calls"], summary["denials"], summary["loop_warnings"])
    assert built["usage"] == {k: summary["usage"][k] for k in COUNTED}
    for agent in summary["agents"]:
        counts = facts.agents[agent["id"]]
        assert (counts["turns"], counts["tool_calls"], counts["usage"]) == (
            agent["turns"], agent["tool_calls"], {k: agent["usage"][k] for k in COUNTED})


def test_the_fold_over_a_recorded_log_says_what_its_summary_says():
    _same_as_summary(ROOT / "examples" / "hello" / "recording")


def test_the_fold_over_a_log_with_a_child_and_a_denial_says_what_its_summary_says(fake, workspace, agent_run):
    r = _run_with_a_child(fake, workspace, agent_run)
    _same_as_summary(r.run_dir)
    assert r.summary["denials"][0]["command"] == "touch x"  # the fold keeps the call's arguments until its result

    facts = fold((logged.event for logged in read_log(r.run_dir / "events.jsonl")), r.run_dir.name)
    so_far = facts.so_far()
    assert (so_far["status"], so_far["exit_code"], so_far["turns"], so_far["tool_calls"]) == ("denied", 3, 2, 3)
    assert so_far["model"] == r.summary["model"]
    keys = ("id", "name", "parent_call_id", "depth", "model", "status", "reason", "turns", "tool_calls", "usage")
    # The run's own agent's ending is the run's (the top of the summary): `runs show` reads it there.
    assert [{k: a.get(k) for k in keys} for a in so_far["agents"]] == [
        {k: a.get(k) for k in keys} | ({"status": None, "reason": None} if a["id"] == "main" else {})
        for a in r.summary["agents"]]


def test_a_run_without_its_end_is_running_and_so_is_a_child_without_its_end():
    child = {"id": "a1", "name": "general", "parent_call_id": "c1", "depth": 1}
    facts = fold([ToolCall(turn=1, call_id="c1", tool="task", arguments="{}"),
                  tag(SubagentStarted(call_id="c1", name="general", description="d", profile="builtin", trusted=True,
                                      model="m", mode="agent", tools=[], tools_sha256="", max_turns=3,
                                      timeout_s=None), child)], "r1")
    so_far = facts.so_far()
    assert (so_far["run_id"], so_far["status"], so_far["tool_calls"]) == ("r1", "running?", 1)
    assert [(a["id"], a["status"], a["model"]) for a in so_far["agents"]] == [("main", None, None),
                                                                            ("a1", "running?", "m")]
    facts(tag(SubagentFinished(call_id="c1", status="success", reason=None, turns=1, tool_calls=0, usage={},
                               duration_s=1.0), child))
    facts(RunFinished(status="success", exit_code=0, reason=None, turns=1, tool_calls=1))
    so_far = facts.so_far()
    assert so_far["status"] == "success" and so_far["agents"][1]["status"] == "success"


def test_events_of_another_version_fold_without_an_error():
    records = [{"type": "model_response", "turn": "one", "usage": {"prompt_tokens": "9", "completion_tokens": 2}},
               {"type": "model_response"},
               {"type": "permission_decision", "decision": "deny", "targets": "shell:x"},
               {"type": "permission_decision", "decision": "deny", "call_id": "c", "targets": [{"target": "t"}]},
               {"type": "from_the_future", "turn": 9}]
    facts = fold((parse_event(r) for r in records), "r")
    assert (facts.turns, facts.usage["prompt_tokens"], facts.usage["completion_tokens"]) == (0, 0, 2)
    assert [(d["call_id"], d["target"]) for d in facts.denials] == [("None", None), ("c", "t")]
