"""summary.json as a fold over the event stream: whatever ended the run, the
summary says what the events say."""

from __future__ import annotations

import json
from typing import Any

from runner.core.events import (
    MAIN,
    CheckStarted,
    Event,
    GuardWarning,
    ModelResponse,
    PermissionDecision,
    RunWarning,
    ToolCall,
    ToolResult,
    agent_id,
    call_ref,
)


class SummaryBuilder:
    def __init__(self, run_id: str, model: str, policy: str) -> None:
        self.run_id = run_id
        self.model = model
        self.policy = policy
        self.turns = 0
        self.tool_calls = 0
        self.usage = {"prompt_tokens": 0, "completion_tokens": 0, "cached_tokens": 0}
        self.denials: list[dict[str, Any]] = []
        self.loop_warnings: list[str] = []
        # `warning` events as `code: message`, beside the budget's own notes in summary.json `warnings`.
        self.warnings: list[str] = []
        # A call's raw arguments while it runs, for a denial's `command` (dropped at its result: a run's
        # `write` payloads are not all kept in memory).
        self._arguments: dict[str, str] = {}
        # Per agent (`main`, then subagents a1, a2, …): turns, tool_calls, usage. `turns` above is the run's own
        # agent's (its conversation's length); tool_calls and usage above are every agent's together.
        self.agents: dict[str, dict[str, Any]] = {MAIN: _counts()}

    def __call__(self, event: Event) -> None:
        who = agent_id(event)
        counts = self.agents.get(who)
        if counts is None:
            counts = self.agents[who] = _counts()
        if isinstance(event, ModelResponse):
            if event.agent is None:
                self.turns = max(self.turns, event.turn)
            counts["turns"] = max(counts["turns"], event.turn)
            for key in self.usage:
                self.usage[key] += int(event.usage.get(key, 0) or 0)
                counts["usage"][key] += int(event.usage.get(key, 0) or 0)
        elif isinstance(event, GuardWarning):
            self.loop_warnings.append(event.message)
        elif isinstance(event, RunWarning):
            self.warnings.append(f"{event.code}: {event.message}")
        elif isinstance(event, ToolCall):
            self.tool_calls += 1
            counts["tool_calls"] += 1
            self._arguments[call_ref(event.agent, event.call_id)] = event.arguments
        elif isinstance(event, CheckStarted):  # the runner's own bash call: a denial names its command, uncounted
            self._arguments[call_ref(event.agent, event.call_id)] = json.dumps({"command": event.command})
        elif isinstance(event, PermissionDecision) and event.decision == "deny":
            deciding = next((t for t in event.targets if t["decision"] == event.policy_decision), event.targets[0])
            self.denials.append({
                "call_id": call_ref(event.agent, event.call_id), "tool": event.tool, "domain": event.permissionDomain,
                "target": deciding["target"], "decision": event.policy_decision,
                "rule": event.rule, "approve": event.approve, "replay": event.replay, "rerun": event.rerun,
                "command": _command(event.tool, self._arguments.get(call_ref(event.agent, event.call_id))),
                **({"agent": event.agent} if event.agent else {}),
            })
        elif isinstance(event, ToolResult):
            self._arguments.pop(call_ref(event.agent, event.call_id), None)

    def build(self, *, status: str, exit_code: int, reason: str | None, duration_s: float,
              answer: str | None) -> dict[str, Any]:
        return {
            "run_id": self.run_id, "status": status, "exit_code": exit_code, "reason": reason,
            "turns": self.turns, "tool_calls": self.tool_calls, "denials": self.denials,
            "usage": dict(self.usage), "duration_s": round(duration_s, 3), "model": self.model,
            "policy": self.policy, "answer": answer, "loop_warnings": list(self.loop_warnings),
            "warnings": list(self.warnings),
        }


def _counts() -> dict[str, Any]:
    return {"turns": 0, "tool_calls": 0, "usage": {"prompt_tokens": 0, "completion_tokens": 0, "cached_tokens": 0}}


def _command(tool: str, arguments: str | None) -> str | None:
    """What a denied call asked for in full: a bash call's command string, else its raw arguments."""
    if arguments is None:
        return None
    if tool == "bash":
        try:
            args = json.loads(arguments)
        except ValueError:
            return arguments
        if isinstance(args, dict) and isinstance(args.get("command"), str):
            return args["command"]
    return arguments
