"""One agent's own tool state: its plan (`todo`), the skill it loaded (`skill`), its delegation (`task`).

Tool instances are definitions, shared by the run's agent and every child it starts (a child's registry is its
parent's, narrowed); what a call changes for the agent that made it lives here, in the `AgentState` its tool context
carries, so a child starts with a plan, a skill and a delegation of its own (runner/engine/build.py builds it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from runner.workspace.skills import Restriction

if TYPE_CHECKING:
    from runner.tools.base import ToolContext, ToolOutput

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


class Delegator(Protocol):
    """An agent's `task` calls (runner/subagents/delegate.py): a child for a call, its place reserved in the model's
    order before calls of one reply run at once."""

    def reserve(self, call_id: str, args: dict[str, Any]) -> None: ...

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput: ...


@dataclass
class AgentState:
    """What one agent's calls change for it: never shared with another agent."""

    plan: Plan = field(default_factory=Plan)
    skill: Restriction = field(default_factory=Restriction)  # the loaded skill's allowed-tools
    delegation: Delegator | None = None  # None: this agent cannot delegate (no `task`, or at the depth limit)
    tools: tuple[str, ...] = ()  # the names of the agent's tools (a task call's risk: can its child run commands)
