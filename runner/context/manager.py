"""When to prune: the stages by share of the usable window, applied in batches.

`usable = window − output budget`, output budget `min(4096, 0.2 × window)`; tokens are the agent's Estimator's
(runner/context/estimate.py: a tokenizer's, or chars/4 calibrated by the server's first count).
Stage 1 at entry from 30% (and for a result that would take the context there while it is recent, at the run's
pace), stage 2 from 50%, stage 3 from 70% (and always before a request would pass the window). Each step is a
`compaction` event; before a summary the full history is written to
`<run_dir>/history/<n>.json`, never modified afterwards.

Compaction must make progress. A summary that leaves the context above the target
(`summarizeAt` − 15 points) is not retried until the context has grown by another
`BACKOFF_GROWTH` of the usable window (nor is a failed one); meanwhile the run goes on as
with no summarizer, stage 2 only. A summary that could not free a tenth of the context
(what must stay is most of it) is not asked for. History snapshots are content-addressed:
each message is stored once under `history/messages/<sha256>.json`, a snapshot lists the
messages in order, and a snapshot equal to the previous one is not written again.

Every request stays inside the usable window: when the stages leave it over, the large
arguments of every protected call already run are kept by reference and every old result
cleared; when even that is not enough the run ends, exit 5 (`budget.name` "context_window"),
never sending a request the server would refuse. A loaded skill and a subagent's answer
are admitted whole, or refused with an error the model can act on when they cannot fit.
"""

from __future__ import annotations

import functools
import hashlib
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runner.context.estimate import Estimator
from runner.context.prune import (
    CARRY_INLINE_CHARS,
    CARRY_OUTPUT_CHARS,
    COMPACTION_PROMPT,
    ToolKinds,
    by_reference,
    carried_line,
    elide_arguments,
    frozen_end,
    hard_clear,
    recent_start,
    soft_trim,
    summarized,
    trim_results,
    whole_calls,
)
from runner.context.window import SUMMARY_ALLOWANCE, does_not_fit, must_stay, over_window
from runner.core.events import Compaction, Emit
from runner.core.jsonutil import canonical, sha256_text, short

DEFAULT_CHARS_WINDOW = 120_000  # with no known window, 120k characters (~30k tokens at 4 a token)
LOW_WATER_GAP = 0.15  # a summary must bring the context this far below its threshold
# A stage-2 batch runs when it leaves at most this share of the usable window more than a summary would keep;
# else a summary runs instead: placeholders stay for the rest of the run, and a batch that leaves much behind is
# followed by the next one sooner (a prefix break each time), while a summary frees them too.
CLEAR_SLACK = 0.05
# A summary is a success when it brings the context this far below summarizeAt; when it does not
# (or fails), the next one waits until the context has grown by this share of the usable window.
BACKOFF_GROWTH = 0.15


# The policy's `compaction` keys read here, each to its ContextConfig field (the dataclass's default when absent); the
# section's other keys are settings (runner/engine/settings.py COMPACTION_KEYS). `agent-run config show` lists them.
POLICY_KEYS = {"contextWindow": "window", "maxChars": "max_chars", "softTrimAt": "soft_at", "hardClearAt": "hard_at",
               "summarizeAt": "summarize_at", "recentTurns": "recent_turns", "softTrimBytes": "soft_keep_bytes"}


@dataclass(frozen=True)
class ContextConfig:
    window: int | None = None  # tokens
    max_chars: int = DEFAULT_CHARS_WINDOW
    soft_at: float = 0.3
    hard_at: float = 0.5
    summarize_at: float = 0.7
    recent_turns: int = 3
    soft_keep_bytes: int = 2048
    kinds: ToolKinds = field(default_factory=ToolKinds)  # the agent's tools by what pruning may do to their calls
    max_messages: int | None = None  # a summary also when the conversation holds more messages than this
    emergency_at: float = 0.95  # a summary due by the share waits for a warm cache up to this share, no further
    cache_ttl_s: float = 300.0  # a response that reported cached prompt tokens keeps the cache warm this long

    @classmethod
    def from_policy(cls, section: dict[str, Any], window: int | None, kinds: ToolKinds,
                    max_messages: int | None = None, emergency_at: float = 0.95,
                    cache_ttl_s: float = 300.0) -> ContextConfig:
        """The policy's `compaction` section, for an agent whose tools are `kinds` (ToolKinds.of its registry);
        the keys that are settings too (option table) come resolved, as keywords."""
        given = {field: section[key] for key, field in POLICY_KEYS.items() if key in section}
        return cls(**{"window": window, **given}, kinds=kinds, max_messages=max_messages, emergency_at=emergency_at,
                   cache_ttl_s=cache_ttl_s)

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
    _pressed: bool = False  # the context has reached softTrimAt once: large results enter trimmed from then on
    _refs: dict[str, str] = field(default_factory=dict)  # call id -> where its whole call is (spilled once)
    turn: int = 0  # the turn whose request is being prepared
    estimator: Estimator = field(default_factory=Estimator)  # how tokens are counted: every consumer's
    _asked: bool = False  # the operator asked for a summary before the next request (`resume --compact`)
    _cached_at: float | None = None  # when the last response reporting cached prompt tokens came (monotonic)
    _delayed: int = 0  # requests sent since a summary fell due, while the cache was warm
    _observed: bool = False  # a response has been observed
    _start: tuple[int, int] | None = None  # the first request's turn and tokens: the run's pace is measured from it

    def observe(self, usage: Mapping[str, int], estimated: int) -> None:
        """A model response's usage, for a prompt estimated at `estimated` tokens: the provider's prompt cache is
        warm while responses report cached tokens; the count the server reports for the first request (estimated
        before any calibration) calibrates the estimate (Estimator.calibrate), and only that one."""
        self._cached_at = time.monotonic() if usage.get("cached_tokens", 0) > 0 else None
        reported, first = usage.get("prompt_tokens", 0), not self._observed
        self._observed = True
        if first:
            self.estimator.calibrate(reported, estimated)

    def _waits(self, share: float) -> bool:
        """Stage 3 waits while the prompt cache is warm (a summary then would re-send the whole prompt uncached
        while the next request would be mostly cached), up to emergencyAt: past it, the summary runs at once."""
        return (self._cached_at is not None and time.monotonic() - self._cached_at < self.config.cache_ttl_s
                and share < self.config.emergency_at)

    def request_summary(self) -> None:
        """A summary before the next request, whatever the thresholds (`resume --compact`)."""
        self._asked = True

    def bind(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> None:
        """The conversation tool results of this turn are admitted into."""
        self._bound = (messages, tools)

    def admit_bound(self, content: str, tool: str | None = None) -> str:
        """A result entering the conversation bound for this turn: trimmed (stage 1), or — a skill or a
        subagent's answer — whole, or refused (ToolError) when it cannot fit whole."""
        if self._bound is None:
            return content
        messages, tools = self._bound
        if tool in self.config.kinds.whole:
            refusal = does_not_fit(self, messages, tools, content, str(tool))
            if refusal is not None:
                raise refusal
            return content
        if len(content.encode()) <= self.config.soft_keep_bytes:
            return content
        counted = functools.cache(lambda: self.estimator.tokens(content))  # at most once: a tokenizer encodes it all
        if not (self._under_pressure(messages, tools, counted) or self._over_window(messages, tools, counted())):
            return content
        where = self.spill(content) if self.spill else None  # what is trimmed is kept, never lost
        return self._trimmed(content, where)

    def _under_pressure(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                        size: Callable[[], int]) -> bool:
        """Stage 1 applies from the first time the context reaches softTrimAt on: after a clear or a summary
        the context fills again, and a result trimmed as it enters costs no prefix break later. Before that, it
        applies to a result that would take the context there while it is one of the recent turns, at the pace the
        run has kept so far (none before its first turn): whole, it would be carried at the cached price in every
        request, into the stretch where every other result enters trimmed, until a prefix break removes it."""
        now = self.tokens(messages, tools)
        threshold = self.config.soft_at * self.config.usable
        self._pressed = self._pressed or now >= threshold
        if self._pressed:
            return True
        pace = 0.0
        if self._start is not None and self.turn > self._start[0]:
            pace = max(now - self._start[1], 0) / (self.turn - self._start[0])
        return now + size() + pace * max(self.config.recent_turns - 1, 0) >= threshold

    def tokens(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> int:
        """Estimated tokens of the canonical prompt `canonical({"tools": …, "messages": …})`: what the run's request
        is counted as, before it is sent (model_request.estimated_tokens, the budgets, the window check).
        Computed from each message's own length, measured once: a message is never changed in place
        (the conversation is appended to; pruning puts new dicts in), so a turn costs what is new,
        not a re-serialisation of the whole conversation several times per request."""
        known, total = self._sizes, 0
        for m in messages:
            hit = known.get(id(m))
            if hit is None or hit[0] is not m:
                hit = known[id(m)] = (m, self.estimator.measure(canonical(m)))
            total += hit[1]
        # Candidates (a cleared copy, what must stay) are measured beside the conversation: the sizes of both
        # are kept, and only what no list of this size holds is dropped, once the cache has grown well past it.
        if len(known) > 4 * len(messages) + 64:
            self._sizes = {id(m): known[id(m)] for m in messages}
        if self._tools_size is None or self._tools_size[0] is not tools:
            self._tools_size = (tools, self.estimator.measure(canonical(tools)))
        return self.estimator.joined(total, len(messages), self._tools_size[1])

    def share(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> float:
        return self.tokens(messages, tools) / self.config.usable

    def admit(self, content: str, where: str | None, messages: list[dict[str, Any]],
              tools: list[dict[str, Any]]) -> str:
        """Stage 1: a tool result entering a context that has reached 30% is trimmed before it is ever sent."""
        if not self._under_pressure(messages, tools, lambda: self.estimator.tokens(content)):
            return content
        return self._trimmed(content, where)

    def _trimmed(self, content: str, where: str | None) -> str:
        trimmed = soft_trim(content, self.config.soft_keep_bytes, where)
        if trimmed != content:
            self.counts["soft_trim"] += 1
            self.stage = "soft_trim"
        return trimmed

    def prepare(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], turn: int,
                placeholder: Callable[[str, str, str, str], str]) -> list[dict[str, Any]]:
        """Before a request: stage 2 or 3 when the thresholds say so; returns the messages to send, always
        inside the usable window (else BudgetExhausted, exit 5)."""
        self.turn = turn
        sent = messages  # the previous request's conversation and what came since: a compaction call extends it
        if self._start is None:
            self._start = (turn, self.tokens(messages, tools))
        share = self.share(messages, tools)
        can_summarize = self.summarize is not None and (
            self._summary_floor is None or self.tokens(messages, tools) >= self._summary_floor)
        escalate = False
        waits = can_summarize and self._waits(share)
        if share >= self.config.hard_at:
            before = self.tokens(messages, tools)
            cleared, by_tool = self._clear(messages, tools, placeholder)
            # A batch must buy room: if clearing cannot get well below the threshold, the next turn
            # would clear again (a prefix break every turn), so summarize instead. With nothing to clear
            # (results of protected calls, long assistant text) there is no such churn: wait for stage 3.
            kept = must_stay(self, messages, tools)  # about what a summary would leave
            low_water = (self.config.hard_at - LOW_WATER_GAP) * self.config.usable
            escalate = (bool(by_tool) and can_summarize and kept <= low_water
                        and self.tokens(cleared, tools) - kept > CLEAR_SLACK * self.config.usable)
            # A batch that cannot get well below the threshold would be followed by another next turn (a prefix
            # break every turn): it waits for stage 3's threshold, where it runs if no summary can do better.
            buys_room = (self.tokens(cleared, tools) <= low_water
                         or (share >= self.config.summarize_at and not waits) or self._over_window(messages, tools))
            if by_tool and not escalate and buys_room:
                messages = cleared
                self._cleared(turn, before, messages, tools, by_tool)
        due = self.share(messages, tools) >= self.config.summarize_at
        if due and waits and not escalate:
            self._delayed, due = self._delayed + 1, False
        trigger = self._trigger(messages, tools, escalate or due)
        if trigger is not None and (can_summarize or (trigger == "operator" and self.summarize is not None)):
            summarized_messages = self._summarize(messages, tools, turn, placeholder, trigger, sent)
            if summarized_messages is messages and escalate:
                # No summary (it failed, or could not free enough): fall back to clearing; a context that
                # degrades, never a run that ends.
                before = self.tokens(messages, tools)
                cleared, by_tool = self._clear(messages, tools, placeholder)
                if by_tool:
                    summarized_messages = cleared
                    self._cleared(turn, before, cleared, tools, by_tool)
            messages = summarized_messages
        if self._over_window(messages, tools):
            messages = self._keep_window(messages, tools, turn, placeholder)
        self.peak = max(self.peak, self.share(messages, tools))
        return messages

    def _trigger(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], by_share: bool) -> str | None:
        """Why a summary is due before this request: the operator asked, the message count, the token share."""
        if self._asked:
            self._asked = False
            return "operator"
        if by_share or self._over_window(messages, tools):
            return "tokens"
        if self.config.max_messages is not None and len(messages) > self.config.max_messages:
            return "messages"
        return None

    def _clear(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
               placeholder: Callable[[str, str, str, str], str]) -> tuple[list[dict[str, Any]], dict[str, int]]:
        """One stage-2 batch: results before the recent turns become placeholders and the large arguments of
        protected calls there are kept by reference; when that leaves the context above the batch's target
        (the recent turns are themselves large writes), the recent turns' written arguments go by reference
        too — their content is in the files now."""
        start = recent_start(messages, self.config.recent_turns)
        cleared, counts = hard_clear(messages, start, placeholder, self.config.kinds)
        cleared, refs = by_reference(cleared, start, self._ref, self.config.kinds)
        if self.share(cleared, tools) > self.config.hard_at - LOW_WATER_GAP:
            cleared, more = by_reference(cleared, len(cleared), self._ref, self.config.kinds)
            refs = {k: refs.get(k, 0) + more.get(k, 0) for k in {*refs, *more}}
        return cleared, {k: counts.get(k, 0) + refs.get(k, 0) for k in {*counts, *refs}}

    def _keep_window(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], turn: int,
                     placeholder: Callable[[str, str, str, str], str]) -> list[dict[str, Any]]:
        """Over the usable window after the stages: every written argument by reference and every old result
        cleared, then one summary if it can bring the prompt under; else the run ends (exit 5)."""
        before = self.tokens(messages, tools)
        start = recent_start(messages, self.config.recent_turns)
        cleared, counts = hard_clear(messages, start, placeholder, self.config.kinds)
        cleared, refs = by_reference(cleared, len(cleared), self._ref, self.config.kinds)
        by_tool = {k: counts.get(k, 0) + refs.get(k, 0) for k in {*counts, *refs}}
        if by_tool:
            messages = cleared
            self._cleared(turn, before, messages, tools, by_tool)
        if self._over_window(messages, tools) and self.summarize is not None:
            messages = self._summarize(messages, tools, turn, placeholder)
        if self._over_window(messages, tools):
            # Last: the recent turns' large results cut to head and tail (whole in their spill files).
            before = self.tokens(messages, tools)
            trimmed, by_tool = trim_results(messages, 0, self.config.soft_keep_bytes, self.spill, self.config.kinds)
            start = recent_start(trimmed, self.config.recent_turns)
            shortened = [*(_shortened(m, self.config.soft_keep_bytes) for m in trimmed[:start]), *trimmed[start:]]
            if shortened != trimmed:  # and the long reasoning of older turns to its ends (in the log whole)
                trimmed, by_tool = shortened, {**by_tool, "assistant": sum(
                    a is not b for a, b in zip(trimmed[:start], shortened[:start], strict=True))}
            if by_tool:
                messages = trimmed
                self._cleared(turn, before, messages, tools, by_tool)
        if self._over_window(messages, tools) and self.config.window is not None:
            raise over_window(self.tokens(messages, tools), self.config)
        return messages  # with no window known (maxChars / 4 is a guess), the server decides

    def fits(self, estimated: int) -> None:
        """A Limits check: the request about to be sent (recitation included) is inside the usable window."""
        if estimated > self.config.usable and self.config.window is not None:
            raise over_window(estimated, self.config)

    def _cleared(self, turn: int, before: int, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                 by_tool: dict[str, int]) -> None:
        self.counts["hard_clear"] += 1
        self.stage = "hard_clear"
        self.emit(Compaction(turn=turn, stage="hard_clear", before_tokens=before,
                             after_tokens=self.tokens(messages, tools), cleared=by_tool, summary=None, history=None))

    def _over_window(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], more: int = 0) -> bool:
        return self.tokens(messages, tools) + more > self.config.usable

    def _summarize(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], turn: int,
                   placeholder: Callable[[str, str, str, str], str], trigger: str = "tokens",
                   sent: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
        """`messages` summarized before `turn`'s request (unchanged when no summary is asked for or it fails); the
        compaction call asked on `sent`, the conversation before this turn's batch, when it has the same messages."""
        keep_from = recent_start(messages, self.config.recent_turns)
        frozen = frozen_end(messages, keep_from, self.config.kinds)
        if frozen >= keep_from:
            return messages  # nothing new to summarize: only the task, earlier summaries and recent turns
        before = self.tokens(messages, tools)
        source = messages
        # Asked on the request before this one as it was sent (a batch of this turn's aside), so all of it but the
        # prompt is cached: the latest turn stays verbatim after the summary, and would be sent uncached twice.
        sent = sent if sent is not None and len(sent) == len(messages) else messages
        asked = [*sent[:_last_sent(sent, keep_from)], {"role": "user", "content": COMPACTION_PROMPT}]
        if self.tokens(asked, tools) > self.config.usable:
            # The compaction call is a request too: it is asked on the cleared conversation when the whole
            # one would not fit (its prefix is not cached then, but it is inside the window).
            cleared = hard_clear(messages, keep_from, placeholder, self.config.kinds)[0]
            source, _ = by_reference(cleared, len(messages), self._ref, self.config.kinds)
            if self.tokens([*source, asked[-1]], tools) > self.config.usable:  # long text to summarize: its ends
                source = [*source[:frozen], *(_shortened(m, self.config.soft_keep_bytes) for m in
                                              source[frozen:keep_from]), *source[keep_from:]]
            asked = [*source, {"role": "user", "content": COMPACTION_PROMPT}]
            if self.tokens(asked, tools) > self.config.usable:
                return messages
        kept = [*source[:frozen], *whole_calls(source[frozen:keep_from], self.config.kinds), *source[keep_from:]]
        if trigger == "tokens" and self.tokens(kept, tools) + SUMMARY_ALLOWANCE > 0.9 * before:
            # What must stay is most of the context: a summary would cost a call and a prefix break for
            # nothing. Not asked; the back-off applies as to one that fell short.
            self._summary_floor = before + int(BACKOFF_GROWTH * self.config.usable)
            return messages
        snapshot = self._snapshot(messages)
        try:
            assert self.summarize is not None
            summary = self.summarize(asked)
        except Exception as exc:  # a failed summary degrades to pruning alone, never ends the run
            self._summary_floor = before + int(BACKOFF_GROWTH * self.config.usable)
            self.emit(Compaction(turn=turn, stage="summarize_failed", before_tokens=before, after_tokens=before,
                                 cleared={}, summary=f"{type(exc).__name__}: {exc}", history=snapshot,
                                 trigger=trigger, delayed_for_cache=self._delayed))
            self._delayed = 0
            return messages
        out = summarized(source, summary, keep_from, self.config.kinds, carry=self._carry)
        after = self.tokens(out, tools)
        fell_short = after > (self.config.summarize_at - LOW_WATER_GAP) * self.config.usable
        self._summary_floor = after + int(BACKOFF_GROWTH * self.config.usable) if fell_short else None
        self.counts["summarize"] += 1
        self.stage = "summarize"
        self.emit(Compaction(turn=turn, stage="summarize", before_tokens=before, after_tokens=after,
                             cleared={}, summary=summary, history=snapshot, trigger=trigger,
                             delayed_for_cache=self._delayed))
        self._delayed = 0
        return out

    def _ref(self, call_id: str, tool: str, arguments: str) -> str:
        """Where a call kept by reference is whole: a spill file and its hash (written once per call)."""
        known = self._refs.get(call_id)
        if known is None:
            where = self.spill(f"{tool} call {call_id}\n\narguments:\n{arguments}\n") if self.spill else None
            known = (f"full call: {where} sha256:{hashlib.sha256(Path(where).read_bytes()).hexdigest()[:16]}"
                     if where else "full call: use memory_search")
            self._refs[call_id] = known
        return known

    def _carry(self, call_id: str, tool: str, arguments: str, output: str) -> str:
        """A protected call carried into a summary: a large one is spilled whole, and named by path and hash;
        one already kept by reference keeps its reference, with the start of its output."""
        if call_id in self._refs:  # whole here still when the batch that referenced it was not kept (prepare)
            if len(arguments) > CARRY_INLINE_CHARS:
                arguments = elide_arguments(arguments, note=self._refs[call_id])
            return f"- {tool} {arguments}: {short(output, CARRY_OUTPUT_CHARS)}"
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


def _last_sent(messages: list[dict[str, Any]], keep_from: int) -> int:
    """Where the request before this one ended: at the latest assistant message (its reply), when that is among the
    kept turns; else the whole conversation."""
    last = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=-1)
    return last if last >= keep_from else len(messages)


def _shortened(message: dict[str, Any], keep_bytes: int) -> dict[str, Any]:
    """An assistant message's long text cut to head and tail, for a compaction call that must fit the window."""
    content = message.get("content")
    if message.get("role") != "assistant" or not isinstance(content, str) or len(content.encode()) <= keep_bytes:
        return message
    return {**message, "content": soft_trim(content, keep_bytes, None)}


def load_snapshot(path: Path) -> list[dict[str, Any]]:
    """The messages of a history snapshot, read back from the message store beside it."""
    entries = json.loads(path.read_text(encoding="utf-8"))
    return [json.loads((path.parent / "messages" / f"{e['sha256']}.json").read_text(encoding="utf-8"))
            for e in entries]
