"""An agent's plan (the `todo` tool's state, kept in its `AgentState`, runner/tools/base.py): the list as last
written, and its recitation."""

from __future__ import annotations

from dataclasses import dataclass, field

MARKS = {"pending": "[ ]", "in_progress": "[>]", "completed": "[x]"}
RECITE_EVERY = 8  # turns without an update or a recitation before the plan is re-sent


def render(items: list[dict[str, str]]) -> str:
    if not items:
        return "(the plan is empty)"
    done = sum(i["status"] == "completed" for i in items)
    lines = [f"{MARKS[i['status']]} {i['content']}" for i in items]
    return "\n".join(lines) + f"\n({done}/{len(items)} completed)"


@dataclass
class Plan:
    """The todo list as the agent last wrote it, and how long ago it was last written or recited."""

    items: list[dict[str, str]] = field(default_factory=list)
    since: int = 0

    def write(self, items: list[dict[str, str]]) -> None:
        self.items = items
        self.since = 0

    def recite(self, turn: int, compacted: bool) -> str | None:
        """Before a request: the plan to re-send (appended), after a compaction or a long stretch; else None."""
        if not self.items:
            return None
        self.since += 1
        if not compacted and self.since <= RECITE_EVERY:
            return None
        self.since = 0
        return f"[agent-run: your plan so far (todo)]\n{render(self.items)}"
