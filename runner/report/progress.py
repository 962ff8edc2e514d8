"""Human progress on stderr: one line per turn and per tool call, secrets masked. A subagent's lines are
indented by its depth and tagged with its id and name: `  [a1 general] [turn 1] model: …`."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, TextIO

from runner.core.events import (
    CheckFinished,
    CheckStarted,
    Event,
    HookFinished,
    ModelFallback,
    ModelRequest,
    ModelResponse,
    ModelRetry,
    PermissionDecision,
    SubagentFinished,
    SubagentStarted,
    ToolCall,
    ToolResult,
    agent_id,
)
from runner.core.jsonutil import seconds_text, short

if TYPE_CHECKING:
    from runner.record.mask import Masker


class Progress:
    def __init__(self, stream: TextIO, verbosity: int, masker: Masker | None = None) -> None:
        self.stream = stream
        self.verbosity = verbosity  # 0 quiet, 1 normal, 2 verbose
        # Keyed by (agent id, call id): a subagent numbers its calls like its parent does, and its calls
        # run while the parent's `task` call is still pending.
        self._pending: dict[tuple[str, str], str] = {}
        self._masker = masker

    def __call__(self, event: Event) -> None:
        # A wait and a fallback are told even with -q: CI must see them.
        if self.verbosity <= 0 and not isinstance(event, ModelRetry | ModelFallback):
            return
        line = self._line(event)
        if line:
            print(self._mask(_tagged(event, line)), file=self.stream, flush=True)

    def _mask(self, text: str) -> str:
        return self._masker.mask(text)[0] if self._masker is not None else text

    def _line(self, event: Event) -> str | None:
        if isinstance(event, ModelRequest) and self.verbosity >= 2:
            return f"[turn {event.turn}] request: {event.message_count} messages, ~{event.estimated_tokens} tokens"
        if isinstance(event, ModelRetry):
            return retry_line(event)
        if isinstance(event, ModelFallback):
            return f"agent-run: model {event.from_model} is down; going on with {event.to_model}: {event.reason}"
        if isinstance(event, ModelResponse):
            n = len(event.message.get("tool_calls") or [])
            # "text", not "final answer": a small model's call written as text is run after this line
            what = f"{n} tool call(s)" if n else "text"
            return f"[turn {event.turn}] model: {what} ({event.duration_s:.1f}s)"
        if isinstance(event, ToolCall):
            # Masked before it is shortened: a token cut in half no longer looks like one.
            self._pending[(agent_id(event), event.call_id)] = f"{event.tool} {short(self._mask(event.arguments))}"
            return None
        if isinstance(event, CheckStarted):  # the task's check: the runner's call, shown as such
            self._pending[(agent_id(event), event.call_id)] = f"check: {short(self._mask(event.command))}"
            return None
        if isinstance(event, CheckFinished):
            head = self._pending.pop((agent_id(event), event.call_id), "check")
            outcome: str | None = "ok" if event.ok else f"{event.error_type} (exit code {event.exit_code})"
            return f"  {head} -> {outcome} ({event.duration_s:.2f}s)"
        if isinstance(event, PermissionDecision):
            key = (agent_id(event), event.call_id)
            self._pending[key] = f"{self._pending.get(key, event.tool)} [{event.decision}]"
            return None
        if isinstance(event, ToolResult):
            head = self._pending.pop((agent_id(event), event.call_id), event.tool)
            outcome = "ok" if event.ok else event.error_type
            return f"  {head} -> {outcome} ({event.bytes} bytes, {event.duration_s:.2f}s)"
        if isinstance(event, HookFinished) and (event.error or event.decision not in (None, "allow")):
            # A hook that refused or failed: what a person reading the job's log needs to see (the rest is recorded).
            said = event.decision if not event.error else \
                f"failed ({event.error}): " + ("refused (onError deny)" if event.decision == "deny" else "going on")
            return f"  hook {event.event} {short(self._mask(event.command))} -> {said} ({event.duration_s:.2f}s)"
        if isinstance(event, SubagentStarted):
            return f"started: {short(event.description)} ({event.model}, mode {event.mode})"
        if isinstance(event, SubagentFinished):
            reason = f": {event.reason}" if event.reason else ""
            return (f"finished: {event.status}{reason} ({event.turns} turns, {event.tool_calls} tool calls, "
                    f"{event.duration_s:.1f}s)")
        return None


def _tagged(event: Event, line: str) -> str:
    agent = event.agent
    if not agent:
        return line
    depth = agent["depth"] if isinstance(agent.get("depth"), int) else 1
    return f"{'  ' * depth}[{agent.get('id')} {agent.get('name')}] {line}"


def retry_line(event: ModelRetry, now: float | None = None) -> str:
    """A wait, as it starts: how long, why, and the wall-clock time (UTC) the next attempt is due."""
    due = time.strftime("%H:%M:%SZ", time.gmtime((time.time() if now is None else now) + event.delay_s))
    if event.requested_s is not None:
        return (f"agent-run: model server asked to wait {seconds_text(event.requested_s)} s ({event.error}); "
                f"retry {event.attempt} at {due}")
    return f"[turn {event.turn}] model error {event.error}; retry {event.attempt} in {event.delay_s}s (at {due})"
