"""When to prune: the stages by share of the usable window, applied in batches.

`usable = window − output budget`, output budget `min(4096, 0.2 × window)`; tokens
are estimated as chars/4. Stage 1 at entry from 30%, stage 2 from 50%, stage 3
from 70% (and always before a request would pass the window). Each step is a
`compaction` event; before a summary the full history is written to
`<run_dir>/history/<n>.json`, never modified afterwards.

Compaction must make progress. A summary that leaves the context above the target
(`summarizeAt` − 15 points) is not retried until the context has grown by another
`BACKOFF_GROWTH` of the usable window (nor is a failed one); meanwhile the run goes on as
with no summarizer, stage 2 only. History snapshots are content-addressed: each message is
stored once under `history/messages/<sha256>.json`, a snapshot lists the messages in order,
and a snapshot equal to the previous one is not written again.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runner.context.prune import (
    CARRY_INLINE_CHARS,
    COMPACTION_PROMPT,
    SUMMARY_MARKER,
    carried_line,
    hard_clear,
    recent_start,
    soft_trim,
    summarized,
)
from runner.core.events import Compaction, Emit
from runner.core.jsonutil import canonical, estimate_tokens, sha256_text

DEFAULT_CHARS_WINDOW = 120_000  # ADR-0002 A: with no known window, 120k characters
LOW_WATER_GAP = 0.15  # a stage-2 batch must bring the context this far below its threshold
# A summary is a success when it brings the context this far below summarizeAt; when it does not
# (or fails), the next one waits until the context has grown by this share of the usable window.
BACKOFF_GROWTH = 0.15


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
    masker: Any = None  # runner.record.mask.Masker: the snapshot is a log surface, secrets masked like the rest
    root: Path | None = None  # what snapshot paths are relative to (the run dir); None: history_dir's parent
    _bound: tuple[list[dict[str, Any]], list[dict[str, Any]]] | None = None
    _summary_floor: int | None = None  # no summary below this many tokens (back-off after one that fell short)
    _stored: dict[str, str] = field(default_factory=dict)  # sha256 of a message -> its stored (masked) blob
    _last_snapshot: tuple[list[dict[str, str]], str] | None = None
    _sizes: dict[int, tuple[dict[str, Any], int]] = field(default_factory=dict)  # id -> (message, canonical length)
    _tools_size: tuple[list[dict[str, Any]], int] | None = None

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
        """Estimated tokens of the canonical prompt, `len(canonical({"tools": …, "messages": …})) / 4`.
        Computed from each message's own length, measured once: a message is never changed in place
        (the conversation is appended to; pruning puts new dicts in), so a turn costs what is new,
        not a re-serialisation of the whole conversation several times per request."""
        known, sizes, total = self._sizes, {}, 0
        for m in messages:
            hit = known.get(id(m))
            if hit is None or hit[0] is not m:
                hit = (m, len(canonical(m)))
            sizes[id(m)] = hit
            total += hit[1]
        self._sizes = sizes
        if self._tools_size is None or self._tools_size[0] is not tools:
            self._tools_size = (tools, len(canonical(tools)))
        # '{"messages":[' m1 ',' m2 … '],"tools":' tools '}'
        return estimate_tokens(13 + total + max(len(messages) - 1, 0) + 10 + self._tools_size[1] + 1)

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
        can_summarize = self.summarize is not None and (
            self._summary_floor is None or self.tokens(messages, tools) >= self._summary_floor)
        escalate = False
        if share >= self.config.hard_at:
            before = self.tokens(messages, tools)
            cleared, by_tool = hard_clear(messages, recent_start(messages, self.config.recent_turns), placeholder)
            # A batch must buy room: if clearing cannot get well below the threshold, the next turn
            # would clear again (a prefix break every turn), so summarize instead. With nothing to clear
            # (results of protected calls, long assistant text) there is no such churn: wait for stage 3.
            escalate = (bool(by_tool) and can_summarize
                        and self.share(cleared, tools) > self.config.hard_at - LOW_WATER_GAP)
            if by_tool and not escalate:
                messages = cleared
                self._cleared(turn, before, messages, tools, by_tool)
        share = self.share(messages, tools)
        if (escalate or share >= self.config.summarize_at or self._over_window(messages, tools)) and can_summarize:
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
        snapshot = self._snapshot(messages)
        try:
            assert self.summarize is not None
            summary = self.summarize([*messages, {"role": "user", "content": COMPACTION_PROMPT}])
        except Exception as exc:  # P4: a failed summary degrades to pruning alone, never ends the run
            self._summary_floor = before + int(BACKOFF_GROWTH * self.config.usable)
            self.emit(Compaction(turn=turn, stage="summarize_failed", before_tokens=before, after_tokens=before,
                                 cleared={}, summary=f"{type(exc).__name__}: {exc}", history=snapshot))
            return messages
        out = summarized(messages, summary, keep_from, carry=self._carry)
        after = self.tokens(out, tools)
        fell_short = after > (self.config.summarize_at - LOW_WATER_GAP) * self.config.usable
        self._summary_floor = after + int(BACKOFF_GROWTH * self.config.usable) if fell_short else None
        self.counts["summarize"] += 1
        self.stage = "summarize"
        self.emit(Compaction(turn=turn, stage="summarize", before_tokens=before, after_tokens=after,
                             cleared={}, summary=summary, history=snapshot))
        return out

    def _carry(self, call_id: str, tool: str, arguments: str, output: str) -> str:
        """A protected call carried into a summary: a large one is spilled whole, and named by path and hash."""
        if len(arguments) + len(output) <= CARRY_INLINE_CHARS or self.spill is None:
            return carried_line(tool, arguments, output, None)
        where = self.spill(f"{tool} call {call_id}\n\narguments:\n{arguments}\n\noutput:\n{output}\n")
        if where is None:
            return carried_line(tool, arguments, output, None)
        digest = hashlib.sha256(Path(where).read_bytes()).hexdigest()[:16]
        return carried_line(tool, arguments, output, f"{where} sha256:{digest}")

    def snapshot(self, messages: list[dict[str, Any]]) -> dict[str, str] | None:
        """For model_request: the messages as sent, `{path: history/<n>.json, sha256}` (of the index file,
        which names each message by the sha256 of its stored text: the chain a rebuild verifies)."""
        where = self._snapshot(messages)
        if where is None or self.history_dir is None:
            return None
        path = Path(where)
        rel = path.relative_to(self.root).as_posix() if self.root else f"{self.history_dir.name}/{path.name}"
        return {"path": rel, "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}

    def _snapshot(self, messages: list[dict[str, Any]]) -> str | None:
        """The history as sent, before a summary: `history/<n>.json` lists the messages in order as
        {role, sha256}; each message is in `history/messages/<sha256>.json`, written once, read-only."""
        if self.history_dir is None:
            return None
        blobs = self.history_dir / "messages"
        blobs.mkdir(parents=True, exist_ok=True)
        entries = []
        for m in messages:
            text = canonical(m)
            key = sha256_text(text)  # of the unmasked text: kept in memory only, to mask each message once
            stored = self._stored.get(key)
            if stored is None:
                masked = self.masker.mask(text)[0] if self.masker is not None else text
                stored = sha256_text(masked)
                blob = blobs / f"{stored}.json"
                if not blob.exists():
                    blob.write_text(masked, encoding="utf-8")
                    blob.chmod(0o444)
                self._stored[key] = stored
            entries.append({"role": str(m.get("role", "")), "sha256": stored})
        if self._last_snapshot is not None and self._last_snapshot[0] == entries:
            return self._last_snapshot[1]  # nothing changed since the last one
        n = len(list(self.history_dir.glob("*.json"))) + 1
        path = self.history_dir / f"{n}.json"
        path.write_text(json.dumps(entries, indent=0), encoding="utf-8")
        path.chmod(0o444)
        self._last_snapshot = (entries, str(path))
        return str(path)


def load_snapshot(path: Path) -> list[dict[str, Any]]:
    """The messages of a history snapshot, read back from the message store beside it."""
    entries = json.loads(path.read_text(encoding="utf-8"))
    return [json.loads((path.parent / "messages" / f"{e['sha256']}.json").read_text(encoding="utf-8"))
            for e in entries]
