"""todo: the plan the agent keeps — a list of items, each pending, in_progress or completed.

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
from runner.tools.base import Tool, ToolContext, ToolError, ToolOutput

STATUSES = ("pending", "in_progress", "completed")
MARKS = {"pending": "[ ]", "in_progress": "[>]", "completed": "[x]"}
MAX_ITEMS = 50
RECITE_EVERY = 8  # turns without an update or a recitation before the plan is re-sent


class Todo(Tool):
    name = "todo"
    domain = "read"
    risk = "low"
    context_class = "protected"
    aliases = ("TodoWrite",)
    description = (
        "Your plan for a multi-step task: the whole list each call, one item in_progress."
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

    def __init__(self) -> None:
        self.items: list[dict[str, str]] = []
        self._since = 0  # turns since the plan was last written or recited

    def targets(self, args: dict[str, Any], ctx: ToolContext) -> list[Target]:
        where = ctx.run_dir / "todos" if ctx.run_dir else ctx.workspace / ".agent-run"
        return [Target("read", path_target(ctx.workspace, where))]

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        items = [{"content": str(i["content"]).strip(), "status": str(i["status"])} for i in args["todos"]]
        busy = sum(i["status"] == "in_progress" for i in items)
        if busy > 1:
            raise ToolError("InvalidArguments", f"{busy} items are in_progress: mark one at a time")
        self.items = items
        self._since = 0
        return ToolOutput(render(items), {"items": len(items),
                                          "completed": sum(i["status"] == "completed" for i in items)})

    def restore(self, events: list[dict[str, Any]], upto_turn: int) -> None:
        """The plan goes on with a resumed conversation: the list as the run left it by turn `upto_turn`, the
        last todo call that succeeded (empty when it cannot be read)."""
        ok = {e.get("call_id") for e in events
              if e.get("type") == "tool_result" and e.get("tool") == self.name and e.get("ok")}
        for e in reversed(events):
            if e.get("type") == "tool_call" and e.get("tool") == self.name and e.get("call_id") in ok \
                    and e.get("turn", 0) <= upto_turn:
                try:
                    self.items = list(json.loads(e["arguments"])["todos"])
                except (ValueError, KeyError, TypeError):
                    self.items = []
                return
        self.items = []

    def recite(self, turn: int, compacted: bool) -> str | None:
        """Before a request: the plan to re-send (appended), after a compaction or a long stretch; else None."""
        if not self.items:
            return None
        self._since += 1
        if not compacted and self._since <= RECITE_EVERY:
            return None
        self._since = 0
        return f"[agent-run: your plan so far (todo)]\n{render(self.items)}"


def render(items: list[dict[str, str]]) -> str:
    if not items:
        return "(the plan is empty)"
    done = sum(i["status"] == "completed" for i in items)
    lines = [f"{MARKS[i['status']]} {i['content']}" for i in items]
    return "\n".join(lines) + f"\n({done}/{len(items)} completed)"
