"""When to prune: the stages by share of the usable window, applied in batches.

`usable = window − output budget`, output budget `min(4096, 0.2 × window)`; tokens
are estimated as chars/4. Stage 1 at entry from 30%, stage 2 from 50%, stage 3
from 70% (and always before a request would pass the window). Each step is a
`compaction` event; before a summary the full history is written to
`<run_dir>/history/<n>.json`, never modified afterwards.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runner.context.prune import (
    COMPACTION_PROMPT,
    SUMMARY_MARKER,
    hard_clear,
    recent_start,
    soft_trim,
    summarized,
)
from runner.events import Compaction, Emit
from runner.jsonutil import canonical, estimate_tokens

DEFAULT_CHARS_WINDOW = 120_000  # ADR-0002 A: with no known window, 120k characters
LOW_WATER_GAP = 0.15  # a stage-2 batch must bring the context this far below its threshold


@dataclass(frozen=True)
class ContextConfig:
    window: int | None = None  # tokens
    max_chars: int = DEFAULT_CHARS_WINDOW
    soft_at: float = 0.3
    hard_at: float = 0.5
    summarize_at: float = 0.7
    recent_turns: int = 3
    soft_keep_bytes: int = 2048

    @classmethod
    def from_policy(cls, section: dict[str, Any], window: int | None) -> ContextConfig:
        return cls(window=section.get("contextWindow", window), max_chars=section.get("maxChars", DEFAULT_CHARS_WINDOW),
                   soft_at=section.get("softTrimAt", 0.3), hard_at=section.get("hardClearAt", 0.5),
                   summarize_at=section.get("summarizeAt", 0.7), recent_turns=section.get("recentTurns", 3),
                   soft_keep_bytes=section.get("softTrimBytes", 2048))

    @property
    def usable(self) -> int:
        if self.window is None:
            return self.max_chars // 4
        return self.window - min(4096, int(0.2 * self.window))


@dataclass
class ContextManager:
    config: ContextConfig
    emit: Emit
    history_dir: Path | None = None
    summarize: Callable[[list[dict[str, Any]]], str] | None = None  # the compaction call
    counts: dict[str, int] = field(default_factory=lambda: {"soft_trim": 0, "hard_clear": 0, "summarize": 0})
    peak: float = 0.0
    stage: str = "none"
    spill: Callable[[str], str | None] | None = None  # keeps a full result, returns where
    masker: Any = None  # runner.mask.Masker: the snapshot is a log surface, secrets masked like the rest
    _bound: tuple[list[dict[str, Any]], list[dict[str, Any]]] | None = None

    def bind(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> None:
        """The conversation tool results of this turn are admitted into."""
        self._bound = (messages, tools)

    def admit_bound(self, content: str) -> str:
        if self._bound is None:
            return content
        messages, tools = self._bound
        if self.share(messages, tools) < self.config.soft_at or len(content.encode()) <= self.config.soft_keep_bytes:
            return content
        where = self.spill(content) if self.spill else None  # P8: what is trimmed is kept
        return self.admit(content, where, messages, tools)

    def tokens(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> int:
        return estimate_tokens(len(canonical({"tools": tools, "messages": messages})))

    def share(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> float:
        return self.tokens(messages, tools) / self.config.usable

    def admit(self, content: str, where: str | None, messages: list[dict[str, Any]],
              tools: list[dict[str, Any]]) -> str:
        """Stage 1: a tool result entering a context already at 30%+ is trimmed before it is ever sent."""
        if self.share(messages, tools) < self.config.soft_at:
            return content
        trimmed = soft_trim(content, self.config.soft_keep_bytes, where)
        if trimmed != content:
            self.counts["soft_trim"] += 1
            self.stage = "soft_trim"
        return trimmed

    def prepare(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], turn: int,
                placeholder: Callable[[str, str, str, str], str]) -> list[dict[str, Any]]:
        """Before a request: stage 2 or 3 when the thresholds say so; returns the messages to send."""
        share = self.share(messages, tools)
        escalate = False
        if share >= self.config.hard_at:
            before = self.tokens(messages, tools)
            cleared, by_tool = hard_clear(messages, recent_start(messages, self.config.recent_turns), placeholder)
            # A batch must buy room: if clearing cannot get well below the threshold, the next turn
            # would clear again (a prefix break every turn), so summarize instead.
            escalate = self.share(cleared, tools) > self.config.hard_at - LOW_WATER_GAP and self.summarize is not None
            if by_tool and not escalate:
                messages = cleared
                self._cleared(turn, before, messages, tools, by_tool)
        share = self.share(messages, tools)
        if (escalate or share >= self.config.summarize_at or self._over_window(messages, tools)) and self.summarize:
            summarized_messages = self._summarize(messages, tools, turn)
            if summarized_messages is messages and escalate:
                # The summary failed: fall back to clearing (P4), even if it has to happen again soon.
                before = self.tokens(messages, tools)
                cleared, by_tool = hard_clear(messages, recent_start(messages, self.config.recent_turns),
                                              placeholder)
                if by_tool:
                    summarized_messages = cleared
                    self._cleared(turn, before, cleared, tools, by_tool)
            messages = summarized_messages
        self.peak = max(self.peak, self.share(messages, tools))
        return messages

    def _cleared(self, turn: int, before: int, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                 by_tool: dict[str, int]) -> None:
        self.counts["hard_clear"] += 1
        self.stage = "hard_clear"
        self.emit(Compaction(turn=turn, stage="hard_clear", before_tokens=before,
                             after_tokens=self.tokens(messages, tools), cleared=by_tool, summary=None, history=None))

    def _over_window(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> bool:
        return self.tokens(messages, tools) > self.config.usable

    def _summarize(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                   turn: int) -> list[dict[str, Any]]:
        keep_from = recent_start(messages, self.config.recent_turns)
        if all(str(m.get("content") or "").startswith(SUMMARY_MARKER) for m in messages[2:keep_from]):
            return messages  # nothing new to summarize: only the task, earlier summaries and recent turns
        before = self.tokens(messages, tools)
        snapshot = None
        if self.history_dir is not None:
            self.history_dir.mkdir(parents=True, exist_ok=True)
            n = len(list(self.history_dir.glob("*.json"))) + 1
            path = self.history_dir / f"{n}.json"
            text = json.dumps(messages, ensure_ascii=False, indent=1)
            path.write_text(self.masker.mask(text)[0] if self.masker is not None else text, encoding="utf-8")
            path.chmod(0o444)
            snapshot = str(path)
        try:
            assert self.summarize is not None
            summary = self.summarize([*messages, {"role": "user", "content": COMPACTION_PROMPT}])
        except Exception as exc:  # P4: a failed summary degrades to pruning alone, never ends the run
            self.emit(Compaction(turn=turn, stage="summarize_failed", before_tokens=before, after_tokens=before,
                                 cleared={}, summary=f"{type(exc).__name__}: {exc}", history=snapshot))
            return messages
        out = summarized(messages, summary, keep_from)
        self.counts["summarize"] += 1
        self.stage = "summarize"
        self.emit(Compaction(turn=turn, stage="summarize", before_tokens=before, after_tokens=self.tokens(out, tools),
                             cleared={}, summary=summary, history=snapshot))
        return out
