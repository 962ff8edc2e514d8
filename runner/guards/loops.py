"""Doom-loop detection: deterministic, outside the model, checked after every call.

Each call is observed as (call fingerprint, result hash). A repeated call whose
result changes is progress (a poll getting somewhere), not a loop. Every detector
counts towards its threshold; at half of it the model is warned (once per
detector and call), at the threshold the run ends with exit 4.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from runner.core.jsonutil import short
from runner.core.outcome import DoomLoop
from runner.guards.base import CallRecord, Verdict

# The policy's `doomLoop` keys, each to its LoopConfig field (`agent-run config show` lists them).
POLICY_KEYS = {"sameToolThreshold": "same_tool_threshold", "maxAttempts": "max_attempts",
               "noProgressThreshold": "no_progress_threshold", "pingPongThreshold": "ping_pong_threshold",
               "noProgressLimit": "no_progress_limit", "maxToolCalls": "max_tool_calls"}


@dataclass(frozen=True)
class LoopConfig:
    same_tool_threshold: int = 5  # identical call, identical result, in a row
    max_attempts: int = 3  # the same call failing with the same error
    no_progress_threshold: int = 10  # same call and result recurring among the last `window` calls
    window: int = 30
    ping_pong_threshold: int = 10  # A, B, A, B … with unchanged results, this many calls
    no_progress_limit: int = 30  # consecutive calls producing no result not seen before
    max_tool_calls: int = 60

    @classmethod
    def from_policy(cls, section: dict[str, Any]) -> LoopConfig:
        return cls(**{field: section[key] for key, field in POLICY_KEYS.items() if key in section})


@dataclass(frozen=True)
class Observation:
    call: str  # tool name + sha256 of its arguments as stable JSON
    result: str  # hash of the result content, volatile fields left out
    failed: bool
    label: str  # for humans: tool and shortened arguments


@dataclass(frozen=True)
class Finding:
    detector: str
    count: int
    threshold: int
    call: str  # the label of the call concerned

    @property
    def fired(self) -> bool:
        return self.count >= self.threshold

    def message(self) -> str:
        what = {
            "same_call": f"the same call with the same result {self.count} times in a row",
            "failing_retries": f"the same call failing with the same error {self.count} times",
            "no_progress": f"the same call and result {self.count} times among the recent calls",
            "ping_pong": f"two calls alternating with unchanged results for {self.count} calls",
            "circuit_breaker": f"{self.count} calls in a row that produced nothing new",
            "call_budget": f"{self.count} tool calls in this run",
        }[self.detector]
        return f"{what} (limit {self.threshold}; call: {self.call})"

    def as_dict(self) -> dict[str, Any]:
        return {"detector": self.detector, "count": self.count, "threshold": self.threshold, "call": self.call}


class LoopDetector:
    def __init__(self, config: LoopConfig) -> None:
        self.config = config
        self.history: list[Observation] = []
        self._seen_results: set[str] = set()
        self._stale_run = 0  # consecutive calls whose result was seen before
        self._warned: set[tuple[str, str]] = set()

    def observe(self, obs: Observation) -> tuple[Finding | None, list[Finding]]:
        """Record a call. Returns (the finding that ends the run, if any; new warnings)."""
        self._stale_run = self._stale_run + 1 if obs.result in self._seen_results else 0
        self._seen_results.add(obs.result)
        self.history.append(obs)
        findings = self._findings(obs)
        fired = next((f for f in findings if f.fired), None)
        if fired is not None:
            return fired, []  # the run ends here: no warning to give
        warnings = []
        for f in findings:
            key = (f.detector, "" if f.detector in ("call_budget", "circuit_breaker") else obs.call)
            if not f.fired and f.count >= math.ceil(f.threshold / 2) and key not in self._warned:
                self._warned.add(key)
                warnings.append(f)
        return fired, warnings

    def _findings(self, obs: Observation) -> list[Finding]:
        c, h = self.config, self.history
        same = (obs.call, obs.result)
        out = [
            Finding("same_call", _trailing(h, lambda o: (o.call, o.result) == same), c.same_tool_threshold, obs.label),
            Finding("no_progress", sum(1 for o in h[-c.window:] if (o.call, o.result) == same),
                    c.no_progress_threshold, obs.label),
            Finding("ping_pong", _alternating(h), c.ping_pong_threshold, obs.label),
            Finding("circuit_breaker", self._stale_run, c.no_progress_limit, obs.label),
            Finding("call_budget", len(h), c.max_tool_calls, obs.label),
        ]
        if obs.failed:
            count = sum(1 for o in h if o.failed and (o.call, o.result) == same)
            out.insert(1, Finding("failing_retries", count, c.max_attempts, obs.label))
        return out


def _trailing(history: list[Observation], same: Any) -> int:
    count = 0
    for o in reversed(history):
        if not same(o):
            break
        count += 1
    return count


def _alternating(history: list[Observation]) -> int:
    """Length of the trailing A, B, A, B … run (A ≠ B, each with an unchanged result)."""
    keys = [(o.call, o.result) for o in history]
    if len(keys) < 2 or keys[-1] == keys[-2]:
        return 0
    length = 2
    for i in range(len(keys) - 3, -1, -1):
        if keys[i] != keys[i + 2]:
            break
        length += 1
    return length if length >= 3 else 0


# Arguments over this many bytes: the call is counted by its tool's name alone (OpenCode's guard does so). A model that
# rewrites a huge argument a little each time (a whole file in `write`, a long pattern) never repeats it exactly.
BIG_ARGUMENTS_BYTES = 4 * 1024


class LoopGuard:
    """The call hook around LoopDetector: warnings for the model, DoomLoop to end the run."""

    def __init__(self, config: LoopConfig) -> None:
        self.detector = LoopDetector(config)

    def __call__(self, record: CallRecord) -> Verdict:
        label = f"{record.tool} {short(record.arguments)}"
        big = len(record.arguments.encode("utf-8", "surrogatepass")) > BIG_ARGUMENTS_BYTES
        call = f"{record.tool} (arguments over {BIG_ARGUMENTS_BYTES} bytes)" if big else record.fingerprint
        fired, warnings = self.detector.observe(Observation(call, record.content_sha256,
                                                            record.error_type is not None, label))
        verdict = Verdict(warnings=[(w.detector, f"possible loop: {w.message()}") for w in warnings])
        if fired is not None:
            verdict.stop = DoomLoop(f"doom loop ({fired.detector}): {fired.message()}", loop=fired.as_dict())
        return verdict

