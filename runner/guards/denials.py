"""Denials cannot burn tokens: a repeated denied call, or too many denials, ends the run (exit 3)."""

from __future__ import annotations

from runner.call import CallRecord
from runner.outcome import Denied

DEFAULT_MAX_DENIALS = 3


class DenialGuard:
    def __init__(self, max_denials: int = DEFAULT_MAX_DENIALS) -> None:
        self.max_denials = max_denials
        self.count = 0
        self._seen: set[str] = set()

    def __call__(self, record: CallRecord) -> None:
        if not record.denied:
            return
        self.count += 1
        if record.fingerprint in self._seen:
            raise Denied(f"the model repeated a denied call ({record.tool} {_short(record.arguments)}); "
                         "the run ends rather than spend tokens on it")
        self._seen.add(record.fingerprint)
        if self.count >= self.max_denials:
            raise Denied(f"{self.count} calls denied (permission.maxDenials is {self.max_denials}); "
                         "see summary.json denials for what to approve")


def _short(text: str, width: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"
