"""The plan the agent keeps (issue 14): the todo tool, its recitation, summary.json and the step summary."""

from __future__ import annotations

import json

from tests.fakes.openai_server import reply

PLAN = [{"content": "read the code", "status": "completed"}, {"content": "fix the bug", "status": "in_progress"},
        {"content": "run the tests", "status": "pending"}]
WITH_IDS = [{"id": str(n), **item} for n, item in enumerate(PLAN, 1)]  # agent-run numbers the items (issue 46)


def test_the_plan_is_kept_recited_and_reported(fake, workspace, agent_run, tmp_path):
    summary_md = tmp_path / "step.md"
    fake.add(reply(calls=[("todo", {"todos": PLAN})]), *[reply(calls=[("list", {"path": f"d{i}"})]) for i in range(9)],
             reply("done"))
    for i in range(9):
        (workspace / f"d{i}").mkdir()
    r = agent_run("task.md", env={"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary_md)})
    assert r.code == 0, r.stderr
    result = json.loads(json.dumps(fake.requests[1]["messages"][-1]))["content"]
    assert "[x] read the code\n[>] fix the bug\n[ ] run the tests\n(1/3 completed)" in result
    assert r.summary["todos"] == WITH_IDS
    recited = [e for e in r.of_type("user_message") if e["reason"] == "recitation"]
    assert len(recited) == 1 and "[>] fix the bug" in recited[0]["content"]
    later = fake.requests[recited[0]["turn"] - 1]["messages"]
    assert later[-1]["role"] == "user" and later[-1]["content"] == recited[0]["content"]
    step = summary_md.read_text()
    assert "### Plan (1/3 completed)" in step and "▶ `fix the bug`" in step


def test_two_items_in_progress_is_an_error_the_model_can_fix(fake, workspace, agent_run):
    busy = [{"content": "a", "status": "in_progress"}, {"content": "b", "status": "in_progress"}]
    fake.add(reply(calls=[("todo", {"todos": busy})]), reply("ok"))
    r = agent_run("task.md")
    error = json.loads(fake.requests[1]["messages"][-1]["content"])["error"]
    assert error["type"] == "InvalidArguments" and "one at a time" in error["message"]
    assert "todos" not in r.summary


def test_a_resumed_run_keeps_the_plan(fake, workspace, agent_run):
    fake.add(reply(calls=[("todo", {"todos": PLAN})]))
    first = agent_run("--max-turns", "1", "task.md")
    assert first.code == 5
    fake.add(reply("finished"))
    resumed = agent_run("resume", str(first.run_dir))
    assert resumed.code == 0 and resumed.summary["todos"] == WITH_IDS


def test_the_plan_survives_compaction(fake, workspace, agent_run):
    from tests.cli.test_context import _turns

    fake.add(reply(calls=[("todo", {"todos": PLAN})]), *_turns(30, thinking=6000))
    r = agent_run("--context-window", "40000", "--approve", "bash:shell:*", "task.md", timeout=120)
    assert r.code == 0, r.summary
    compacted = {e["turn"] for e in r.of_type("compaction")}
    recited = {e["turn"] for e in r.of_type("user_message") if e["reason"] == "recitation"}
    assert compacted and compacted <= recited  # re-sent after every compaction
    last = fake.requests[-1]["messages"]
    assert any("[>] fix the bug" in str(m.get("content")) for m in last)  # still in the context at the end
    assert r.summary["todos"] == WITH_IDS
