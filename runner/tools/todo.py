"""todo: the plan the agent keeps — a list of items, each pending, in_progress, completed or failed, each with an id
agent-run gives it (runner/tools/plan.py), mirrored in the run directory's `plan.json`.

Each call replaces the whole list (Claude's TodoWrite, Codex's update_plan). The list lives in the
run, not the workspace: it is decided like a read of the run's own directory (always allowed), its
results are protected from pruning and carried into summaries (runner/context/prune.py), it is
re-sent (recited: the plan outlives a compaction) as an appended user message after a compaction and
after RECITE_EVERY turns without an update, and it ends up in summary.json `todos` and the step summary.
"""

from __future__ import annotations

import json
from typing import Any

from runner.policy.model import Target
from runner.policy.targets import path_target
from runner.tools.base import AgentState, Tool, ToolContext, ToolError, ToolOutput
from runner.tools.plan import render

STATUSES = ("pending", "in_progress", "completed", "failed")
MAX_ITEMS = 50


class Todo(Tool):
    name = "todo"
    domain = "read"
    risk = "low"
    context_class = "protected"
    aliases = ("TodoWrite",)
    description = (
        "Plan for a multi-step task: the whole list each call, one in_progress."
    )
    schema = {
        "type": "object",
        "properties": {
            "todos": {
                "type": "array", "maxItems": MAX_ITEMS,
                "items": {
                    "type": "object",
                    "properties": {"content": {"type": "string", "minLength": 1},
                                   "status": {"type": "string", "enum": list(STATUSES)}},
                    "required": ["content", "status"], "additionalProperties": False,
                },
            },
        },
        "required": ["todos"],
        "additionalProperties": False,
    }

    def targets(self, args: dict[str, Any], ctx: ToolContext) -> list[Target]:
        where = ctx.run_dir / "todos" if ctx.run_dir else ctx.workspace / ".agent-run"
        return [Target("read", path_target(ctx.workspace, where))]

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        items = [{"content": str(i["content"]).strip(), "status": str(i["status"])} for i in args["todos"]]
        busy = sum(i["status"] == "in_progress" for i in items)
        if busy > 1:
            raise ToolError("InvalidArguments", f"{busy} items are in_progress: mark one at a time")
        ctx.state.plan.write(items)  # the calling agent's plan (AgentState, runner/tools/base.py)
        ctx.state.plan.mirror(ctx.run_dir, ctx.agent or "main")
        return ToolOutput(render(items), {"items": len(items),
                                          "completed": sum(i["status"] == "completed" for i in items)})


    def restore(self, state: AgentState, events: list[dict[str, Any]], upto_turn: int) -> None:
        """The plan goes on with a resumed conversation: the list as the run left it by turn `upto_turn`, the
        last todo call that succeeded (empty when it cannot be read)."""
        ok = {e.get("call_id") for e in events
              if e.get("type") == "tool_result" and e.get("tool") == self.name and e.get("ok")}
        for e in reversed(events):
            if e.get("type") == "tool_call" and e.get("tool") == self.name and e.get("call_id") in ok \
                    and e.get("turn", 0) <= upto_turn:
                try:
                    state.plan.write(list(json.loads(e["arguments"])["todos"]))  # numbered as when it was written
                except (ValueError, KeyError, TypeError):
                    state.plan.items = []
                return
        state.plan.items = []
