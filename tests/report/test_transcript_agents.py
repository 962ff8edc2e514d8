"""A subagent in transcript.md and on stderr: its events (in the run's one events.jsonl) are rendered nested under
the parent's `task` call that started it, its call ids (which repeat its parent's) kept apart from the parent's."""

from __future__ import annotations

import re

from runner.record.logged import parse_record
from runner.report.markdown import last_turns
from runner.report.transcript import render
from tests.fakes.openai_server import reply

ALLOW_TASK = """{ "extends": "default",
  "risk": { "rules": [ { "domain": "task", "pattern": "agent:**", "level": "medium" } ] }, "permission": { "rules": [
  { "domain": "task", "pattern": "agent:**", "decision": "allow" } ] } }"""
CHILD = "CHILD-SUBTASK"  # in the child's prompt: its requests are routed to its own script


def _run_with_a_child(fake, workspace, agent_run):
    (workspace / "p.jsonc").write_text(ALLOW_TASK, encoding="utf-8")
    (workspace / "a.txt").write_text("old\n", encoding="utf-8")
    fake.add(reply("Delegating.", calls=[("task", {"description": "fix a", "prompt": f"{CHILD}: fix a.txt"})]),
             reply("parent done"))
    fake.route(CHILD, reply(calls=[("read", {"path": "a.txt"})]), reply("child answer"))
    r = agent_run("--policy", "p.jsonc", "task.md")
    assert r.code == 0, r.stderr
    # The premise: both conversations number their first call the same.
    assert {(e["agent"] or {}).get("id"): e["call_id"] for e in r.of_type("tool_call")} == {
        None: "call_1_0", "a1": "call_1_0"}
    return r


def test_a_subagents_turns_are_nested_under_the_task_call_that_started_it(fake, workspace, agent_run):
    r = _run_with_a_child(fake, workspace, agent_run)
    text = (r.run_dir / "transcript.md").read_text(encoding="utf-8")
    task_call = text.index("### `task` call `call_1_0`\n")
    started = text.index("\n> #### Subagent a1 (general): fix a\n")
    child_turn1 = text.index("\n> ##### Turn 1 (a1)\n")
    child_call = text.index("\n> ###### `read` call `a1:call_1_0`\n")
    child_turn2, finished = text.index("\n> ##### Turn 2 (a1)\n"), text.index("\n> **Subagent a1 finished: success**")
    parent_result = text.index("\n→ ok (12 bytes)\n\n```text\nchild answer\n```\n")
    assert task_call < started < child_turn1 < child_call < child_turn2 < finished < parent_result
    assert text.index("## Turn 2\n") > parent_result and text.count("## Turn 1\n") == 1
    block = text[started:parent_result]
    # Every line of the child's block is quoted (its read result too), and the quote is closed before the
    # parent's result of the same call id, which is not.
    assert all(line.startswith(">") for line in block.strip("\n").splitlines())
    assert "> Decision: **allow** by rule `allow workspace:**`" in block
    assert "> → ok (5 bytes)\n>\n> ```text\n> 1\told\n> ```\n" in block
    assert "> > child answer\n" in block and "· 1 tool calls ·" in block
    assert "model `gpt-4o-mini` · mode `agent` · profile `builtin`" in block
    # The final answer is the parent's, and the usage says what each agent used.
    assert "## Final answer\n\n> parent done" in text
    agents = {a["id"]: a for a in r.summary["agents"]}
    assert f"- main: 2 turns · 1 tool calls · {agents['main']['usage']['prompt_tokens']} prompt tokens" in text
    assert "- a1 (general, success): 2 turns · 1 tool calls · " in text
    # The step summary's "last turns" still cut at the parent's turns, the child's inside its turn 1.
    recent, before = last_turns(text, 1)
    assert before == 1 and recent.startswith("## Turn 2") and "Subagent" not in recent
    assert "> #### Subagent a1" in last_turns(text, 2)[0]

    shown = agent_run("runs", "show", str(r.run_dir), "--transcript")
    assert shown.code == 0, shown.stderr
    assert shown.stdout == text


def test_a_subagents_progress_lines_are_tagged_and_its_calls_kept_apart(fake, workspace, agent_run):
    r = _run_with_a_child(fake, workspace, agent_run)
    lines = r.stderr.splitlines()
    assert "  [a1 general] started: fix a (gpt-4o-mini, mode agent)" in lines
    # The duration in brackets is the machine's, not the run's: matched as a number.
    assert any(re.fullmatch(r"  \[a1 general\] \[turn 1\] model: 1 tool call\(s\) \(\d+\.\ds\)", line)
               for line in lines)
    assert any(line.startswith('  [a1 general]   read {"path": "a.txt"} [allow] -> ok (5 bytes') for line in lines)
    assert any(line.startswith("  [a1 general] finished: success (2 turns, 1 tool calls") for line in lines)
    # The parent's pending task call was not taken by the child's result of the same call id.
    assert any(line.startswith('  task {"description": "fix a"') and "[allow] -> ok (12 bytes" in line
               for line in lines)


def test_a_grandchild_is_quoted_twice_and_an_unfinished_child_is_closed():
    a1 = {"id": "a1", "name": "general", "parent_call_id": "c1", "depth": 1}
    a2 = {"id": "a2", "name": "explore", "parent_call_id": "c1", "depth": 2}
    events = [
        {"type": "model_request", "turn": 1, "agent": None},
        {"type": "model_response", "turn": 1, "agent": None, "message": {"content": "", "tool_calls": [{}]}},
        {"type": "tool_call", "turn": 1, "call_id": "c1", "tool": "task", "arguments": "{}", "agent": None},
        {"type": "subagent_started", "call_id": "c1", "name": "general", "description": "outer", "agent": a1},
        {"type": "model_request", "turn": 1, "agent": a1},
        {"type": "model_response", "turn": 1, "agent": a1, "message": {"content": "", "tool_calls": [{}]}},
        {"type": "tool_call", "turn": 1, "call_id": "c1", "tool": "task", "arguments": "{}", "agent": a1},
        {"type": "subagent_started", "call_id": "c1", "name": "explore", "description": "inner", "agent": a2},
        {"type": "model_request", "turn": 1, "agent": a2},
        {"type": "model_response", "turn": 1, "agent": a2, "message": {"content": "deep\nanswer"}},
        {"type": "subagent_finished", "call_id": "c1", "status": "success", "turns": 1, "tool_calls": 0,
         "usage": {}, "agent": a2},
        {"type": "tool_result", "call_id": "c1", "tool": "task", "ok": True, "bytes": 11, "content": "deep answer",
         "agent": a1},
        {"type": "interrupted", "signal": "SIGTERM", "during": "model_request", "agent": None},
    ]
    text = render(map(parse_record, events), {"status": "interrupted", "exit_code": 130, "answer": None})
    assert "\n> > #### Subagent a2 (explore): inner\n" in text
    assert "> > ##### Turn 1 (a2)\n> >\n> > > deep\n> > > answer\n" in text
    assert "\n> ###### `task` call `a1:c1`\n" in text
    # Back from a2 to a1 without leaving a1's quote; then from a1 (never finished) to the run's own lines.
    assert "> > **Subagent a2 finished: success**" in text and "· 1 turns · 0 tool calls\n" in text
    assert "\n>\n> → ok (11 bytes)\n>\n> ```text\n> deep answer\n> ```\n\n🛑 **Interrupted** by SIGTERM" in text
    assert "## Final answer\n\n*(none)*" in text


def test_children_that_ran_at_once_are_each_shown_in_one_piece():
    # --parallel-agents: two children's events interleave in the log; the transcript shows each child's turns
    # together, where it finished, before the parent's result of its task call.
    a1 = {"id": "a1", "name": "general", "parent_call_id": "c0", "depth": 1}
    a2 = {"id": "a2", "name": "general", "parent_call_id": "c1", "depth": 1}

    def child(agent, kind, **more):
        return {"type": kind, "agent": agent, **more}

    events = [
        {"type": "model_request", "turn": 1, "agent": None},
        {"type": "model_response", "turn": 1, "agent": None, "message": {"content": "", "tool_calls": [{}, {}]}},
        {"type": "tool_call", "turn": 1, "call_id": "c0", "tool": "task", "arguments": "{}", "agent": None},
        {"type": "tool_call", "turn": 1, "call_id": "c1", "tool": "task", "arguments": "{}", "agent": None},
        child(a1, "subagent_started", call_id="c0", name="general", description="first"),
        child(a2, "subagent_started", call_id="c1", name="general", description="second"),
        child(a1, "model_request", turn=1), child(a2, "model_request", turn=1),
        child(a2, "model_response", turn=1, message={"content": "second answer"}),
        child(a1, "model_response", turn=1, message={"content": "first answer"}),
        child(a2, "subagent_finished", call_id="c1", status="success", turns=1, tool_calls=0, usage={}),
        child(a1, "subagent_finished", call_id="c0", status="success", turns=1, tool_calls=0, usage={}),
        {"type": "tool_result", "call_id": "c0", "tool": "task", "ok": True, "bytes": 12, "content": "first answer",
         "agent": None},
        {"type": "tool_result", "call_id": "c1", "tool": "task", "ok": True, "bytes": 13, "content": "second answer",
         "agent": None},
    ]
    text = render(map(parse_record, events), {"status": "success", "exit_code": 0, "answer": "done"})
    first, second = text.index("Subagent a1 (general): first"), text.index("Subagent a2 (general): second")
    first_end, second_end = text.index("Subagent a1 finished"), text.index("Subagent a2 finished")
    assert second < second_end < first < first_end  # a2 finished first: its block comes first, whole
    assert text.index("> > first answer") < first_end and text.index("> > second answer") < second_end
    assert first_end < text.index("→ ok (12 bytes)") < text.index("→ ok (13 bytes)")
