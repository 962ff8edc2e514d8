"""The text deltas of one request across its attempts, so that a consumer never sees a text twice.

A stream that breaks mid-answer is retried, and the retry starts the answer again. A consumer of
`--output-format stream-json` concatenates a turn's deltas (as Claude's consumers do), so the retry's
text is passed on only from where the earlier attempts' text ends: while the new attempt says what was
already shown, nothing is passed on. When it says something else (sampling differs between attempts), or
ends before what was shown, the consumer is told to drop the turn's text (`on_delta(turn, None)`, a
`text_reset` line) and is given the new attempt's text from its start.
"""

from __future__ import annotations

from collections.abc import Callable


class AttemptDeltas:
    def __init__(self, on_delta: Callable[[int, str | None], None], turn: int) -> None:
        self._on_delta = on_delta
        self._turn = turn
        self._shown: list[str] = []  # what the consumer holds of this turn's text
        self._before = ""  # the same, joined when an attempt starts
        self._attempt: list[str] = []  # this attempt's text so far
        self._at = 0  # characters of this attempt so far
        self._following = True  # this attempt has said only what was shown, so far

    @property
    def showed(self) -> bool:
        """The consumer holds some of this turn's text."""
        return bool(self._shown)

    def begin(self) -> None:
        """A new attempt of the request starts."""
        self._before = "".join(self._shown)
        self._attempt, self._at, self._following = [], 0, True

    def feed(self, text: str) -> None:
        self._attempt.append(text)
        if not self._following:
            self._pass(text)
            return
        seen = self._before[self._at:self._at + len(text)]
        self._at += len(text)
        if text.startswith(seen):
            if len(text) > len(seen):
                self._pass(text[len(seen):])
            return
        self._restart()

    def end(self, *, complete: bool) -> None:
        """The attempt's stream ended; `complete`: with its finish_reason (this is the reply)."""
        if complete and self._following and self._at < len(self._before):  # the reply is shorter than what was shown
            self._restart()
        self._on_delta(self._turn, "")

    def _restart(self) -> None:
        self._following = False
        self._shown = []
        self._on_delta(self._turn, None)
        self._pass("".join(self._attempt))

    def _pass(self, text: str) -> None:
        if text:
            self._shown.append(text)
            self._on_delta(self._turn, text)
