"""summary.json as a fold over the event stream: whatever ended the run, the
summary says what the events say.

The one fold of a run's events: the recorder feeds it each event as it is emitted (summary.json), and the
readers of a run directory feed it the events read back (runner/record/logged.py) — `runs show` and
`runs list` for a run without a summary (still going, or killed: `so_far`). An event read back from a log of
another version may hold None in any field: the fold counts it as nothing there.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from runner.core.events import (
    MAIN,
    CheckStarted,
    Event,
    GuardWarning,
    ModelResponse,
    PermissionDecision,
    RunFinished,
    RunStarted,
    RunWarning,
    SubagentFinished,
    SubagentStarted,
    ToolCall,
    ToolResult,
    agent_id,
    call_ref,
)

# summary.json `cause`: why the run ended, one step finer than `status`. A status's own cause, unless the ending
# named a finer one (a RunEnded's `cause` detail): `provider_down`, a model server still down after its retries and
# every --fallback-model (exit 6); `protocol`, a model response that broke the protocol (an answer cut off, or again
# none after being told; exit 1).
STATUS_CAUSES: dict[str, str] = {
    "success": "completed", "failed": "failed", "usage_error": "usage_error", "denied": "denied",
    "doom_loop": "doom_loop", "budget_exhausted": "budget", "model_error": "model_error",
    "interrupted": "interrupted", "land_failed": "land_failed",
}
CAUSES: tuple[str, ...] = (*STATUS_CAUSES.values(), "provider_down", "protocol")
# The causes `--auto-resume` resumes (runner/sessions/auto_resume.py): transient, a new request may well pass. Never
# a denial, a loop guard, a budget or a failed check: those are the operator's to decide.
AUTO_RESUMED: frozenset[str] = frozenset({"provider_down", "protocol"})


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
        # What a run without a summary.json shows of itself (`so_far`): the run's own start and end, each
        # subagent's tag (as its first event carried it), start and end.
        self.started: RunStarted | None = None
        self.finished: RunFinished | None = None
        self.tags: dict[str, dict[str, Any]] = {}
        self.subagents_started: dict[str, SubagentStarted] = {}
        self.subagents_finished: dict[str, SubagentFinished] = {}

    def __call__(self, event: Event) -> None:
        who = agent_id(event)
        counts = self.agents.get(who)
        if counts is None:
            counts = self.agents[who] = _counts()
            self.tags[who] = event.agent or {}
        if isinstance(event, ModelResponse):
            turn = event.turn if isinstance(event.turn, int) else 0
            if event.agent is None:
                self.turns = max(self.turns, turn)
            counts["turns"] = max(counts["turns"], turn)
            for key in self.usage:
                count = _tokens((event.usage or {}).get(key))
                self.usage[key] += count
                counts["usage"][key] += count
        elif isinstance(event, RunStarted):
            if event.agent is None:
                self.started = event
        elif isinstance(event, RunFinished):
            if event.agent is None:
                self.finished = event
        elif isinstance(event, SubagentStarted):
            self.subagents_started[who] = event
        elif isinstance(event, SubagentFinished):
            self.subagents_finished[who] = event
        elif isinstance(event, GuardWarning):
            self.loop_warnings.append(event.message)
        elif isinstance(event, RunWarning):
            self.warnings.append(f"{event.code}: {event.message}")
        elif isinstance(event, ToolCall):
            self.tool_calls += 1
            counts["tool_calls"] += 1
            self._arguments[_ref(event)] = event.arguments
        elif isinstance(event, CheckStarted):  # the runner's own bash call: a denial names its command, uncounted
            self._arguments[_ref(event)] = json.dumps({"command": event.command})
        elif isinstance(event, PermissionDecision) and event.denied:
            self.denials.append(self._denial(event))
        elif isinstance(event, ToolResult):
            self._arguments.pop(_ref(event), None)

    def _denial(self, event: PermissionDecision) -> dict[str, Any]:
        targets = [t for t in event.targets or [] if isinstance(t, dict)] or [{}]
        deciding = next((t for t in targets if t.get("decision") == event.policy_decision), targets[0])
        return {
            "call_id": _ref(event), "tool": event.tool, "domain": event.permissionDomain,
            "target": deciding.get("target"), "decision": event.policy_decision,
            "rule": event.rule, "approve": event.approve, "replay": event.replay, "rerun": event.rerun,
            "command": _command(event.tool, self._arguments.get(_ref(event))),
            **({"agent": event.agent} if event.agent else {}),
        }

    def build(self, *, status: str, exit_code: int, reason: str | None, duration_s: float,
              answer: str | None) -> dict[str, Any]:
        return {
            "run_id": self.run_id, "status": status, "exit_code": exit_code, "reason": reason,
            "cause": STATUS_CAUSES.get(status, "failed"),  # a finer one from the ending's details (CAUSES)
            "turns": self.turns, "tool_calls": self.tool_calls, "denials": self.denials,
            "usage": dict(self.usage), "duration_s": round(duration_s, 3), "model": self.model,
            "policy": self.policy, "answer": answer, "loop_warnings": list(self.loop_warnings),
            "warnings": list(self.warnings),
        }


    def so_far(self) -> dict[str, Any]:
        """A summary as far as the events go, for a run that has no summary.json (still going, or killed
        before writing it): status `running?` until its run_finished; `agents` (as summary.json's, without
        costs) when it had subagents, each `running?` until its subagent_finished."""
        out: dict[str, Any] = {"run_id": self.run_id, "status": "running?", "turns": self.turns,
                               "tool_calls": self.tool_calls, "usage": dict(self.usage)}
        if self.started is not None:
            out.update(model=self.started.model, policy=self.started.policy, replay_of=self.started.replay_of,
                       resumed_from=self.started.resumed_from)
        if self.finished is not None:
            out.update(status=self.finished.status, exit_code=self.finished.exit_code, reason=self.finished.reason)
        if len(self.agents) > 1:
            out["agents"] = [self._agent_so_far(aid, counts) for aid, counts in self.agents.items()]
        return out

    def _agent_so_far(self, aid: str, counts: dict[str, Any]) -> dict[str, Any]:
        tag = {"id": MAIN, "depth": 0} if aid == MAIN else self.tags.get(aid, {})
        entry = {"id": tag.get("id"), "name": tag.get("name"), "parent_call_id": tag.get("parent_call_id"),
                 "depth": tag.get("depth"), "model": self.started.model if aid == MAIN and self.started else None,
                 "status": "running?" if aid != MAIN else None, "turns": counts["turns"],
                 "tool_calls": counts["tool_calls"], "usage": dict(counts["usage"])}
        if (started := self.subagents_started.get(aid)) is not None:
            entry.update(model=started.model, mode=started.mode)
        if (finished := self.subagents_finished.get(aid)) is not None:
            entry.update(status=finished.status, reason=finished.reason)
        return entry


def fold(events: Iterable[Event], run_id: str) -> SummaryBuilder:
    """The fold over a run's events read back (runner/record/logged.py), as the recorder folds them live."""
    facts = SummaryBuilder(run_id, model="", policy="")
    for event in events:
        facts(event)
    return facts


def _ref(event: ToolCall | CheckStarted | PermissionDecision | ToolResult) -> str:
    """The call an event is about, as summary.json's denials and `replay --call` name it (a subagent's prefixed)."""
    return call_ref(event.agent, str(event.call_id))


def _tokens(value: object) -> int:
    """A usage figure; anything but a number (a log of another version) counts nothing."""
    return value if isinstance(value, int) else 0


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
