"""Human progress on stderr: one line per turn and per tool call."""

from __future__ import annotations

from typing import TextIO

from runner.events import Event, ModelRequest, ModelResponse, ModelRetry, PermissionDecision, ToolCall, ToolResult
from runner.jsonutil import short


class Progress:
    def __init__(self, stream: TextIO, verbosity: int) -> None:
        self.stream = stream
        self.verbosity = verbosity  # 0 quiet, 1 normal, 2 verbose
        self._pending: dict[str, str] = {}

    def __call__(self, event: Event) -> None:
        if self.verbosity <= 0:
            return
        line = self._line(event)
        if line:
            print(line, file=self.stream, flush=True)

    def _line(self, event: Event) -> str | None:
        if isinstance(event, ModelRequest) and self.verbosity >= 2:
            return f"[turn {event.turn}] request: {event.message_count} messages, ~{event.estimated_tokens} tokens"
        if isinstance(event, ModelRetry):
            return f"[turn {event.turn}] model error {event.error}; retry {event.attempt} in {event.delay_s}s"
        if isinstance(event, ModelResponse):
            n = len(event.message.get("tool_calls") or [])
            what = f"{n} tool call(s)" if n else "final answer"
            return f"[turn {event.turn}] model: {what} ({event.duration_s:.1f}s)"
        if isinstance(event, ToolCall):
            self._pending[event.call_id] = f"{event.tool} {short(event.arguments)}"
            return None
        if isinstance(event, PermissionDecision):
            self._pending[event.call_id] = f"{self._pending.get(event.call_id, event.tool)} [{event.decision}]"
            return None
        if isinstance(event, ToolResult):
            head = self._pending.pop(event.call_id, event.tool)
            outcome = "ok" if event.ok else event.error_type
            return f"  {head} -> {outcome} ({event.bytes} bytes, {event.duration_s:.2f}s)"
        return None

