"""Half a character from a model server, mended where the reply's text enters the runner.

JSON escapes a character beyond the BMP as a UTF-16 pair (`\\ud83d\\ude00`), and a server that cuts its text
between the halves (a token boundary, a stream chunk) sends one half alone. Python decodes it into a `str` that no
UTF-8 file, pipe, hash or event log takes: the run would die on its first write of it. So a pair split across two
stream chunks is joined again, and a half with no other half becomes U+FFFD and is counted, for the run to say so
(a `warning`, code lone_surrogate). A tool call's arguments are JSON text: a half escaped inside them (`\\ud83d`
in the arguments, which their parse would turn into the same half) is replaced by `\\ufffd` there.
"""

from __future__ import annotations

import re

_SURROGATE = re.compile("[\ud800-\udfff]")
_ESCAPED_HALF = re.compile(r"\\u[dD][89a-fA-F]")
# Left to right, every escape consumed whole (so `\\\\ud83d`, an escaped backslash, is no escape of a half): a pair,
# a half alone (group 1), or any other escape.
_ESCAPE = re.compile(r"\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|(\\u[dD][89a-fA-F][0-9a-fA-F]{2})|"
                     r"\\.", re.DOTALL)


def mend(text: str) -> str:
    """`text` with its pairs joined and every lone half replaced by U+FFFD (itself when it has no half: most)."""
    if not _SURROGATE.search(text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


class Mend:
    """Mends the texts of one reply and counts the halves it replaced."""

    def __init__(self) -> None:
        self.replaced = 0

    def text(self, text: str) -> str:
        mended = mend(text)
        if mended is not text:
            self.replaced += mended.count("\ufffd") - text.count("\ufffd")
        return mended

    def json_text(self, text: str) -> str:
        """JSON text (a call's arguments): its characters mended, then the halves its escapes spell alone."""
        text = self.text(text)
        if not _ESCAPED_HALF.search(text):
            return text

        def one(match: re.Match[str]) -> str:
            if match.group(1) is None:
                return match.group(0)
            self.replaced += 1
            return "\\ufffd"

        return _ESCAPE.sub(one, text)


class StreamHalves:
    """A stream's text pieces mended one by one for a consumer that sees them as they arrive: a piece's last high
    half waits for the next piece, whose first character may be its other half. The pieces joined are `mend` of
    the whole text."""

    def __init__(self) -> None:
        self._held = ""

    def feed(self, piece: str) -> str:
        piece, self._held = self._held + piece, ""
        if piece and "\ud800" <= piece[-1] <= "\udbff":
            piece, self._held = piece[:-1], piece[-1]
        return mend(piece)

    def end(self) -> str:
        held, self._held = self._held, ""
        return mend(held)
