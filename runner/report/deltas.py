"""`--stream --output-format stream-json`: the model's text as it arrives, one stdout line per piece:
`{"type": "text_delta", "turn": N, "text": "..."}`. Never written to events.jsonl.

Masked like everything printed, the way `runner.record.mask.MaskedStream` masks a spill file: the last `HOLD`
characters (or more: the longest secret value in the environment) wait until more text, or the end of the
reply, shows they are no part of a secret, and a secret that reaches into them waits whole. So a token split
across deltas is masked whole. Unlike `MaskedStream`, nothing is cut inside a secret to bound the buffer: a
private key or JWT found by its start waits until it has all arrived (its masked form is short), since a
key whose start was masked would go out in clear from there. The concatenated deltas of a reply are its
masked text."""

from __future__ import annotations

import json
import threading
from typing import Any, TextIO

from runner.record.mask import Masker, redact

# What waits for more text. A secret found by its start (a PEM block, a JWT) is held from there while it grows,
# so the hold need only cover what needs context (`password = "…"`) and the known secret values' forms.
HOLD = 256


class TextDeltas:
    """`on_delta(turn, text)` for `OpenAIChat`: `text == ""` ends the turn's reply (flushes what is held back);
    `text is None`: the turn's text so far is void (a retried request that said something else), a
    `{"type": "text_reset", "turn": N}` line, and what is held back is dropped."""

    def __init__(self, out: TextIO, masker: Masker, hold: int = HOLD) -> None:
        self._out = out
        self._masker = masker
        self._hold = max(hold, masker.longest + 1)  # a known value or its encoded form, found whole
        self._turn: int | None = None
        self._pending = ""
        self._lock = threading.Lock()  # called from the model call's worker thread

    def __call__(self, turn: int, text: str | None) -> None:
        with self._lock:
            if self._turn != turn:
                self._take(final=True)
                self._turn = turn
            if text is None:
                self._pending = ""
                self._line({"type": "text_reset", "turn": turn})
            elif text:
                self._pending += text
                if len(self._pending) > self._hold:
                    self._take(final=False)
            else:
                self._take(final=True)

    def close(self) -> None:
        with self._lock:
            self._take(final=True)

    def _take(self, *, final: bool) -> None:
        text = self._pending
        if not text:
            return
        spans = self._masker.spans(text)
        cut = len(text) if final else len(text) - self._hold
        for s in spans:
            if s.start < cut < s.end:  # a secret across the cut waits whole
                cut = s.start
        if cut <= 0:
            return
        self._pending = text[cut:]
        self._write(redact(text[:cut], [s for s in spans if s.end <= cut]))

    def _write(self, text: str) -> None:
        if not text or self._turn is None:
            return
        self._line({"type": "text_delta", "turn": self._turn, "text": text})

    def _line(self, line: dict[str, Any]) -> None:
        self._out.write(json.dumps(line, ensure_ascii=False) + "\n")
        self._out.flush()
