"""Subagents (issue 16), through the real CLI with the scripted model: a parent delegates with `task`, the child
runs its own loop under the parent's policy and its answer comes back as the tool result. Each escalation path
is tried (profile tools, profile mode, --approve, nested task calls), and the run's budgets are shared."""

from __future__ import annotations

import json
from pathlib import Path

from tests.fakes.openai_server import reply

ALLOW_TASK = """{ "extends": "default", "permission": { "rules": [
  { "domain": "task", "pattern": "agent:**", "decision": "allow" } ] } }"""
CHILD = "CHILD-SUBTASK"  # in the child's prompt: its requests are routed to its own script


def _policy(workspace: Path, text: str = ALLOW_TASK, name: str = "p.jsonc") -> str:
    (workspace / name).write_text(text, encoding="utf-8")
    return name


def _profile(workspace: Path, name: str, front: str, body: str = "You are careful.", where: str = ".agents/agents"):
    d = workspace / where
    d.mkdir(parents=True, exist_ok=True)
    (d / f"{name}.md").write_text(f"---\nname: {name}\n{front}\n---\n{body}\n", encoding="utf-8")


def _task(args: dict) -> tuple[str, dict]:
    return ("task", {"description": "subtask", "prompt": f"{CHILD}: {args.pop('prompt', 'do it')}", **args})


def _of_agent(r, aid: str | None) -> list[dict]:
    return [e for e in r.events if (e["agent"] or {}).get("id") == aid]


def _tool_result(r, aid: str | None, tool: str) -> dict:
    return next(e for e in _of_agent(r, aid) if e["type"] == "tool_result" and e["tool"] == tool)


def test_a_child_reads_and_edits_and_its_answer_reaches_the_parent(fake, workspace, agent_run):
    (workspace / "a.txt").write_text("old\n", encoding="utf-8")
    fake.add(reply(calls=[_task({"prompt": "fix a.txt"})]), reply("the child fixed it"))
    fake.route(CHILD, reply(calls=[("read", {"path": "a.txt"})]),
               reply(calls=[("edit", {"path": "a.txt", "old_string": "old", "new_string": "new"})]),
               reply("changed old to new in a.txt"))
    r = agent_run("--policy", _policy(workspace), "task.md")
    assert r.code == 0, r.stderr
    assert (workspace / "a.txt").read_text() == "new\n"
    parent_second = fake.requests[-1]["messages"]
    assert parent_second[-1] == {"role": "tool", "tool_call_id": parent_second[-2]["tool_calls"][0]["id"],
                                 "content": "changed old to new in a.txt"}
    child_first = next(b for b in fake.requests if CHILD in json.dumps(b["messages"][1:2]))
    system = child_first["messages"][0]
    assert system["role"] == "system" and "You are a subagent" in system["content"]
    assert len(child_first["messages"]) == 2  # a fresh conversation: nothing of the parent's
    assert "task" not in [t["function"]["name"] for t in child_first["tools"]]  # depth limit 1
    started = r.of_type("subagent_started")[0]
    assert started["agent"] == {"id": "a1", "name": "general", "parent_call_id": started["call_id"], "depth": 1}
    assert started["profile"] == "builtin" and started["mode"] == "agent"
    assert r.of_type("subagent_finished")[0]["status"] == "success"
    assert [e["type"] for e in _of_agent(r, "a1")][:2] == ["subagent_started", "model_request"]
    assert r.summary["changed_files"] == ["a.txt"]
    agents = {a["id"]: a for a in r.summary["agents"]}
    assert agents["a1"]["turns"] == 3 and agents["a1"]["tool_calls"] == 2 and agents["main"]["turns"] == 2
    total = sum(a["usage"]["prompt_tokens"] for a in agents.values())
    assert total == r.summary["usage"]["prompt_tokens"] > 0
