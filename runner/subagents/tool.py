"""task: delegate a self-contained subtask to a child agent (runner/subagents/delegate.py).

Decided by the policy as domain `task`, target `agent:<profile>`; what the child then does is decided
call by call under the same policy (never wider). The profiles offered are listed in this tool's
description, fixed for the run, so the tools array (part of the prompt prefix) never changes.
"""

from __future__ import annotations

from typing import Any

from runner.policy.model import Target
from runner.subagents.profiles import GENERAL, Profile
from runner.tools.base import Delegator, Tool, ToolContext, ToolError, ToolOutput

MAX_PROMPT_CHARS = 100_000


class TaskTool(Tool):
    name = "task"
    domain = "task"
    concurrent = "agent"  # a reply's task calls run at once (--parallel-agents)
    risk = "high"  # a child whose profile is not known (risk_of says more for one that is)
    context_class = "whole"  # a subagent's answer: half of one is worse than none
    aliases = ("Task",)
    offered = "added"  # with subagents on

    def __init__(self, profiles: dict[str, Profile]) -> None:
        self.profiles = profiles
        listed = "\n".join(f"- {p.name}: {p.description}" for p in profiles.values())
        self.description = (  # type: ignore[misc]
            "Delegate a self-contained subtask to a subagent with your tools and permissions; only its answer "
            "returns. prompt: all it needs (it sees nothing else) and what to report. "
            f"agent (default {GENERAL}):\n{listed}")
        self.schema = {  # type: ignore[misc]
            "type": "object", "additionalProperties": False, "required": ["description", "prompt"],
            "properties": {
                "description": {"type": "string", "minLength": 1, "maxLength": 200},
                # No maxLength here: grammar-constrained servers turn the schema into a sampling grammar,
                # and llama-cpp-python's crashes (SIGSEGV) on a bound this large. Enforced in `targets`.
                "prompt": {"type": "string", "minLength": 1},
                "agent": {"type": "string", "enum": sorted(profiles)},
            },
        }

    def targets(self, args: dict[str, Any], ctx: ToolContext) -> list[Target]:
        if len(str(args.get("prompt") or "")) > MAX_PROMPT_CHARS:  # before the policy, like a schema error
            raise ToolError("InvalidArguments", f"prompt is longer than {MAX_PROMPT_CHARS:,} characters: give the "
                            "subagent the essentials and the paths of files to read")
        return [Target("task", f"agent:{args.get('agent') or GENERAL}")]

    def risk_of(self, args: dict[str, Any], ctx: ToolContext) -> str | None:
        """`high` for a child that can run commands (its profile offers `bash`, or every tool of a parent that
        has it); `medium` for one that can only read and edit."""
        profile = self.profiles.get(args.get("agent") or GENERAL)
        if profile is None:
            return self.risk
        names = [name for name, _ in profile.tools] if profile.tools is not None else ctx.state.tools
        return "high" if "bash" in names else "medium"

    def reserve(self, args: dict[str, Any], ctx: ToolContext, call_id: str) -> None:
        _delegation(ctx).reserve(call_id, args)

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        return _delegation(ctx).run(args, ctx)


def _delegation(ctx: ToolContext) -> Delegator:
    """The calling agent's delegation (AgentState, runner/tools/base.py): every agent that is offered `task` has one."""
    if ctx.state.delegation is None:
        raise ToolError("SubagentFailed", "this agent cannot delegate", status="refused")
    return ctx.state.delegation
