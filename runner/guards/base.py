"""What a guard sees of a finished call and what it answers: the contract between the call hooks
(runner/engine/call.py), which run the guards after every result, and the guards themselves.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from runner.core.outcome import RunEnded


@dataclass(frozen=True)
class CallRecord:
    """What guards see of a finished call."""

    call_id: str
    tool: str
    arguments: str
    fingerprint: str  # tool name + sha256 of the arguments as stable JSON
    denied: bool
    error_type: str | None
    content_sha256: str


@dataclass
class Verdict:
    """A guard's answer: warnings appended to this call's result, or the end of the run."""

    warnings: list[tuple[str, str]] = field(default_factory=list)  # (detector, message)
    notes: list[str] = field(default_factory=list)  # appended to this call's result as they are (a skill recited)
    stop: RunEnded | None = None


Guard = Callable[[CallRecord], Verdict | None]
