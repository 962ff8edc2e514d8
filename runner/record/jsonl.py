"""Reading an events.jsonl (or any of the run's JSON-lines files) back: the one reader of them, line by line, never
loaded whole, never waiting on a FIFO. Below both the run directory (rundir.py) and its integrity check
(integrity.py), which both read logs.

A log is input: downloaded as an artifact, or left by a run killed mid-write. So a line is held only up to
MAX_LINE_BYTES, the longest line the event log writes (runner/record/rundir.py EventLog refuses a longer event):
a longer one is measured without being held and left out, whatever its size. A line's JSON may nest at most
MAX_DEPTH levels (core/jsonutil.py, which the writer enforces too): past it the parser, or whatever walks the
record after it, would run out of stack. A line that is no record (`BadLine`: too long, too deep, not JSON, not an
object) is left out by a reader that tolerates it, told to `on_bad` when one is given; the hash chain's check
(integrity.py) refuses the run naming it.

A run killed mid-write (SIGKILL, the OOM killer) can leave a torn last line: bytes after the last newline.
`whole_length` says where the whole lines end, without reading the torn line (it can be megabytes), so a
continuation reads up to there and records how much it left out.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from runner.core.jsonutil import MAX_DEPTH, nested_over

_CHUNK = 1 << 16
# The longest line a log may hold: twice the default bound of one model response (AGENT_RUN_MAX_RESPONSE_BYTES,
# 64 MiB), whose message one model_response event carries whole, with room for its masking.
MAX_LINE_BYTES = 128 << 20


@dataclass(frozen=True)
class BadLine:
    """A line that is no record: its 1-based number, and why (`longer than N bytes`, `nested deeper than …`)."""

    number: int
    why: str


@dataclass(frozen=True)
class Long:
    """A line longer than the cap, in place of its bytes (never held)."""

    length: int
    torn: bool  # the last line, without its newline

    def why(self, cap: int = MAX_LINE_BYTES) -> str:
        return (f"incomplete ({self.length:,} bytes, no newline)" if self.torn and self.length <= cap
                else f"longer than {cap:,} bytes ({self.length:,})")


def whole_length(path: Path) -> tuple[int, int]:
    """(the bytes of the whole lines, the bytes after the last newline: a torn last line, 0 when whole).
    Scans back from the end in chunks: the torn line is skipped over, never held."""
    with path.open("rb") as f:
        size = os.fstat(f.fileno()).st_size
        end = size
        while end > 0:
            start = max(0, end - _CHUNK)
            f.seek(start)
            at = f.read(end - start).rfind(b"\n")
            if at >= 0:
                return start + at + 1, size - (start + at + 1)
            end = start
    return 0, size


def iter_lines(path: Path, end: int | None = None, cap: int = MAX_LINE_BYTES) -> Iterator[bytes | Long]:
    """The raw lines (each with its newline, if it has one); a line longer than `cap`, or a torn last line longer
    than a read chunk (64 KiB), as its `Long` instead, never held. With `end`, only those within the first `end`
    bytes (whole_length's first figure: a torn tail is never read)."""
    if end == 0:
        return
    with path.open("rb") as f:
        at = 0
        while end is None or at < end:
            line = _line(f, at, cap)
            if line is None:
                return
            length = line.length if isinstance(line, Long) else len(line)
            if end is not None and at + length > end:
                return
            at += length
            yield line


def _line(f: IO[bytes], at: int, cap: int) -> bytes | Long | None:
    """The line at offset `at` (where `f` is), or its `Long` when over `cap` (`f` then past it); None at the end."""
    first = f.readline(_CHUNK)
    if not first:
        return None
    if first.endswith(b"\n") or len(first) < _CHUNK:
        return first
    length, whole = len(first), False  # a long line: measured first, piece by piece, and read only if it fits
    while piece := f.readline(_CHUNK):
        length += len(piece)
        if piece.endswith(b"\n"):
            whole = True
            break
    if length > cap or not whole:  # a torn tail past one chunk is no record either: never held
        return Long(length, torn=not whole)
    f.seek(at)
    return f.read(length)


def torn(line: bytes | Long) -> bool:
    """The last line of its file, without its newline: what a run killed mid-write leaves."""
    return line.torn if isinstance(line, Long) else not line.endswith(b"\n")


def parse_line(line: bytes | Long, number: int, cap: int = MAX_LINE_BYTES) -> dict[str, Any] | BadLine:
    """One line as a record (a JSON object), or why it is none."""
    if isinstance(line, Long):
        return BadLine(number, line.why(cap))
    return parse_text(line.decode("utf-8", errors="replace"), number)


def parse_text(text: str, number: int) -> dict[str, Any] | BadLine:
    """A line's text as a record (a JSON object) nested at most MAX_DEPTH levels, or why it is none."""
    try:
        record = json.loads(text)
    except RecursionError:
        return BadLine(number, f"nested deeper than {MAX_DEPTH} levels")
    except ValueError as exc:
        return BadLine(number, f"not JSON ({getattr(exc, 'msg', exc)})")
    if not isinstance(record, dict):
        return BadLine(number, "not a JSON object")
    if nested_over(record):
        return BadLine(number, f"nested deeper than {MAX_DEPTH} levels")
    return record


def iter_events(path: Path, end: int | None = None,
                on_bad: Callable[[BadLine], None] | None = None) -> Iterator[dict[str, Any]]:
    """The file's records streamed line by line, never loaded whole; a line that is no record is left out, and
    told to `on_bad` when given — but for a torn last line (a run killed mid-write: its normal state, which a
    continuation records). Nothing when the file does not exist or is not a regular file (a FIFO). `end`: only
    the records in the first `end` bytes (see iter_lines)."""
    if not path.is_file():
        return
    for number, line in enumerate(iter_lines(path, end), start=1):
        record = parse_line(line, number)
        if isinstance(record, BadLine):
            if on_bad is not None and not torn(line):
                on_bad(record)
            continue
        yield record
