"""`replay --approve --continue` into a subagent: a denied call of a child is approved, the child's own
conversation is rebuilt from the log (its events carry its id) with the approved result in place, the
child goes on to its answer, and that answer replaces the parent's `task` result before the parent goes on.

Only children of the run's own agent (depth 1, the default limit) can be continued; a deeper child's
calls are still replayed, without --continue.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from runner.core.jsonutil import canonical, sha256_text
from runner.core.outcome import UsageError
from runner.engine.build import Agent
from runner.engine.call import truncated
from runner.record.conversation import ConversationError, of_agent, read_recorded, rebuild
from runner.subagents.delegate import Child, Delegation
from runner.subagents.tool import TaskTool
from runner.tools.base import ToolError


def continue_children(run_dir: Path, events: list[dict[str, Any]], chosen: list[dict[str, Any]],
                      results: dict[str | None, dict[str, str]], agent: Agent) -> tuple[dict[str, str], int]:
    """Each child with approved calls, continued to its answer. Returns the parent's results (the approved
    ones, and each continued child's new `task` result) and the parent's turn to rebuild up to."""
    parent = dict(results.get(None, {}))
    upto = max((c["turn"] for c in chosen if not c.get("agent")), default=0)
    children: dict[str, dict[str, Any]] = {}
    for c in chosen:
        if c.get("agent"):
            children.setdefault(c["agent"]["id"], c["agent"])
    if not children:
        return parent, upto
    task = agent.env.registry.get("task")
    delegation = agent.state.delegation
    if not isinstance(task, TaskTool) or not isinstance(delegation, Delegation):
        raise UsageError("cannot --continue into a subagent: subagents are off for this replay (subagents.maxDepth "
                         "is 0, or the policy denies every profile)")
    for aid, info in sorted(children.items(), key=lambda kv: int(kv[0][1:])):
        if info.get("depth", 1) > 1:
            raise UsageError(f"cannot --continue into {aid}: it is a subagent's subagent (depth {info['depth']}); "
                             "replay its calls without --continue")
        own = of_agent(events, aid)
        started = next((e for e in own if e.get("type") == "subagent_started"), None)
        if started is None:
            raise UsageError(f"{aid}: no subagent_started event in the log")
        profile = task.profiles.get(started["name"])
        if profile is None:
            raise UsageError(f"cannot --continue into {aid}: its profile {started['name']!r} is not available here "
                             f"(offered: {', '.join(task.profiles)})")
        tools = _recorded_tools(run_dir, aid, started["tools_sha256"])
        turn = max(c["turn"] for c in chosen if (c.get("agent") or {}).get("id") == aid)
        conversation = rebuild(run_dir, events, turn, results.get(aid, {}), agent=aid)
        try:
            child = Child(profile, started["call_id"], started["description"], aid=aid, tools=tools,
                          first_turn=conversation.last_turn + 1, previous=conversation.last_prompt)
            output = delegation.start(child, agent.env.ctx, conversation.messages)
            content = truncated(task, output, agent.env.ctx).content
        except ToolError as err:
            content = canonical(err.payload())
        parent[started["call_id"]] = content
        calls = [e for e in of_agent(events, None) if e.get("type") == "tool_call"
                 and e.get("call_id") == started["call_id"]]
        upto = max(upto, *(e["turn"] for e in calls)) if calls else upto
    return parent, upto


def _recorded_tools(run_dir: Path, aid: str, expected: str) -> list[dict[str, Any]]:
    path = run_dir / "history" / "agents" / f"{aid}.tools.json"
    try:
        tools = json.loads(read_recorded(path).decode("utf-8"))  # a FIFO there is refused, never waited on
    except (OSError, ValueError) as exc:
        raise ConversationError(f"{path}: {exc}") from None
    if sha256_text(canonical(tools)) != expected:
        raise ConversationError(f"{path} was changed after the run (its sha256 does not match the event log)")
    return tools
