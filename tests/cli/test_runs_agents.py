"""`agent-run runs show` on a run with a subagent: calls keyed by call_ref (a child's `call_1_0` is not its parent's),
each request and call marked with its agent, and the summary's `agents` shown."""

from __future__ import annotations

import json

from tests.cli.test_runs import _section
from tests.fakes.openai_server import reply

ALLOW_TASK = """{ "extends": "default",
  "risk": { "rules": [ { "domain": "task", "pattern": "agent:**", "level": "medium" } ] }, "permission": { "rules": [
  { "domain": "task", "pattern": "agent:**", "decision": "allow" } ] } }"""
CHILD = "CHILD-SUBTASK"


def _run_with_a_child(fake, workspace, agent_run):
    (workspace / "p.jsonc").write_text(ALLOW_TASK, encoding="utf-8")
    (workspace / "a.txt").write_text("old\n", encoding="utf-8")
    fake.add(reply(calls=[("task", {"description": "fix a", "prompt": f"{CHILD}: fix a.txt"})]), reply("parent done"))
    # The child's first call has the parent's task call's id; its second is denied (bash needs approval).
    fake.route(CHILD, reply(calls=[("read", {"path": "a.txt"}), ("bash", {"command": "touch x"})]),
               reply("child answer"))
    r = agent_run("--policy", "p.jsonc", "task.md")
    assert r.code == 3, r.stderr
    return r


def test_show_json_keys_calls_by_ref_and_marks_the_subagents(fake, workspace, agent_run):
    r = _run_with_a_child(fake, workspace, agent_run)
    data = json.loads(agent_run("runs", "show", "--json", str(r.run_dir)).stdout)
    calls = data["tool_calls"]
    assert [(c["call_id"], c["tool"], (c["agent"] or {}).get("id")) for c in calls] == [
        ("call_1_0", "task", None), ("a1:call_1_0", "read", "a1"), ("a1:call_1_1", "bash", "a1")]
    # Each result went to its own call: the child's read did not land on the parent's task call, nor the other way.
    assert [(c["decision"], c["outcome"]) for c in calls] == [
        ("allow", "ok"), ("allow", "ok"), ("deny", "ApprovalRequired")]
    results = {((e["agent"] or {}).get("id"), e["call_id"]): e["bytes"] for e in r.of_type("tool_result")}
    assert calls[0]["bytes"] == results[(None, "call_1_0")] and calls[1]["bytes"] == results[("a1", "call_1_0")]
    assert calls[1]["agent"] == {"id": "a1", "name": "general", "parent_call_id": "call_1_0", "depth": 1}
    assert [(q["agent"] or {}).get("id") for q in data["requests"]] == [None, "a1", "a1", None]
    assert data["denials"][0]["call_id"] == "a1:call_1_1"
    assert [a["id"] for a in data["summary"]["agents"]] == ["main", "a1"]


def test_show_text_has_the_agents_and_a_column_saying_whose_each_row_is(fake, workspace, agent_run):
    r = _run_with_a_child(fake, workspace, agent_run)
    shown = agent_run("runs", "show", str(r.run_dir))
    assert shown.code == 0, shown.stderr
    out = shown.stdout
    agents = {a["id"]: a for a in r.summary["agents"]}
    rows = _section(out, "agents (2)")
    assert rows[0][:6] == ["main", "-", "gpt-4o-mini", "denied", "2", "1"]
    assert rows[1][:7] == ["a1", "general", "gpt-4o-mini", "success", "2", "2",
                           f"{sum(agents['a1']['usage'][k] for k in ('prompt_tokens', 'completion_tokens')):,}"]
    assert "\n    a1   general " in out  # indented by its depth
    assert [row[:2] for row in _section(out, "requests (4)")] == [["main", "1"], ["a1", "1"], ["a1", "2"],
                                                                  ["main", "2"]]
    calls = _section(out, "tool calls (3)")
    assert [row[:3] for row in calls] == [["main", "1", "task"], ["a1", "1", "read"], ["a1", "1", "bash"]]
    assert calls[1][-3:] == ["allow", "ok", "5"]  # "1\told", not the task call's 12 bytes
    assert "  a1:call_1_1 bash: ask bash on shell:touch x" in out

    # A run still going (no summary.json yet): the same, from its events.
    (r.run_dir / "summary.json").unlink()
    partial = agent_run("runs", "show", str(r.run_dir)).stdout
    assert [row[:6] for row in _section(partial, "agents (2)")] == [
        ["main", "-", "gpt-4o-mini", "denied", "2", "1"], ["a1", "general", "gpt-4o-mini", "success", "2", "2"]]
    assert "duration: - · 2 turns · 3 tool calls" in partial  # the run's turns are its own agent's
