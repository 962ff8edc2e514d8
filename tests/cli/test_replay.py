"""`agent-run replay --continue` takes the streaming and budget flags `run` has; those that only a
conversation with the model uses are refused without --continue."""

from __future__ import annotations

import json

from tests.fakes.openai_server import reply
from tests.fakes.summary_schema import validate_result_line


def _denied_run(fake, agent_run):
    fake.add(reply(calls=[("bash", {"command": "echo hi > out.txt"})]), reply("needs approval"))
    first = agent_run("task.md")
    assert first.code == 3, first.stderr
    return first


def test_replay_continue_streams_events_and_keeps_the_budgets_given(fake, workspace, agent_run):
    first = _denied_run(fake, agent_run)
    # Each reply costs 15 tokens (the fake's usage): the second request passes the budget of 20.
    fake.add(reply(calls=[("bash", {"command": "cat out.txt"})]), reply("never asked"))
    r = agent_run("replay", str(first.run_dir), "--approve", "--continue", "--output-format", "stream-json",
                  "--max-tokens", "20", "--max-cost-usd", "5", "--no-stream")
    assert r.code == 5, r.stderr
    lines = [json.loads(line) for line in r.stdout.splitlines()]
    assert lines[0]["type"] == "run_started" and lines[-1]["type"] == "result"
    validate_result_line(lines[-1])
    assert [e["type"] for e in lines[:-1]] == [e["type"] for e in r.events]  # the log, as it happened
    assert lines[-1]["status"] == "budget_exhausted" == r.summary["status"] and r.summary["exit_code"] == 5
    assert "max_tokens" in r.summary["reason"] or "token" in r.summary["reason"], r.summary["reason"]
    assert not any(req.get("stream") for req in fake.requests[2:])  # --no-stream reached the model


def test_model_flags_without_continue_are_refused(fake, workspace, agent_run):
    first = _denied_run(fake, agent_run)
    for flag in (["--max-tokens", "9"], ["--max-cost-usd", "1"], ["--max-turns", "2"], ["--stream"],
                 ["--model", "m"]):
        r = agent_run("replay", str(first.run_dir), "--approve", *flag)
        assert r.code == 2 and "only with --continue" in r.stderr and flag[0] in r.stderr, r.stderr
        assert r.new_dirs == [] and not (workspace / "out.txt").exists()
    # What applies to the approved calls too stays allowed: the events on stdout, the whole-run timeout.
    r = agent_run("replay", str(first.run_dir), "--approve", "--output-format", "stream-json", "--timeout", "60")
    assert r.code == 0, r.stderr
    lines = [json.loads(line) for line in r.stdout.splitlines()]
    assert [e["type"] for e in lines[:-1]] == [e["type"] for e in r.events] and lines[-1]["type"] == "result"
    validate_result_line(lines[-1])
    assert r.summary["status"] == "success" and (workspace / "out.txt").read_text() == "hi\n"
