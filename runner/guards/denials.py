"""Denials cannot burn tokens: a repeated denied call, or too many denials, ends the run (exit 3)."""

from __future__ import annotations

import threading

from runner.core.jsonutil import short
from runner.core.outcome import Denied
from runner.guards.base import CallRecord, Verdict

DEFAULT_MAX_DENIALS = 3


class DenialGuard:
    def __init__(self, max_denials: int = DEFAULT_MAX_DENIALS) -> None:
        self.max_denials = max_denials
        self.count = 0
        self._seen: set[str] = set()
        self._lock = threading.Lock()  # one guard for the run: child agents running at once share it

    def __call__(self, record: CallRecord) -> Verdict | None:
        if not record.denied:
            return None
        with self._lock:
            return self._denied(record)

    def _denied(self, record: CallRecord) -> Verdict | None:
        self.count += 1
        if record.fingerprint in self._seen:
            return Verdict(stop=Denied(f"the model repeated a denied call ({record.tool} "
                                       f"{short(record.arguments)}); the run ends rather than spend tokens on it"))
        self._seen.add(record.fingerprint)
        if self.count >= self.max_denials:
            return Verdict(stop=Denied(f"{self.count} calls denied (permission.maxDenials is {self.max_denials}); "
                                       "see summary.json denials for what to approve"))
        return None

