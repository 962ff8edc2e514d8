"""`--model replay:RUN_DIR`: the assistant messages of a recorded run, in order, no network."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from runner.events import Event
from runner.model.base import ModelReply
from runner.outcome import ModelError, UsageError
from runner.rundir import read_events


class ReplayModel:
    def __init__(self, run_dir: Path) -> None:
        log = run_dir / "events.jsonl"
        if not log.is_file():
            raise UsageError(f"replay: {log} not found")
        try:
            events = read_events(log)
        except ValueError as exc:
            raise UsageError(f"replay: {log} is not valid JSON lines: {exc}") from None
        self.name = f"replay:{run_dir}"
        self.source = run_dir
        self._replies = [ModelReply(e["message"], e.get("usage") or {}, e.get("finish_reason"))
                         for e in events if e.get("type") == "model_response"]
        self._next = 0

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, turn: int,
                 emit: Callable[[Event], None], timeout: float | None = None,
                 tool_choice: str | None = None) -> ModelReply:
        if self._next >= len(self._replies):
            raise ModelError(f"replay recording ran out after {len(self._replies)} responses ({self.source})")
        reply = self._replies[self._next]
        self._next += 1
        return reply
