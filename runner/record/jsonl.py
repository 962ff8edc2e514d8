"""Reading an events.jsonl back: line by line, never loaded whole, never waiting on a FIFO. Below both the
run directory (rundir.py) and its integrity check (integrity.py), which both read logs.

A run killed mid-write (SIGKILL, the OOM killer) can leave a torn last line: bytes after the last newline.
`whole_length` says where the whole lines end, without reading the torn line (it can be megabytes), so a
continuation reads up to there and records how much it left out.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

_CHUNK = 1 << 16


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


def iter_lines(path: Path, end: int | None = None) -> Iterator[bytes]:
    """The raw lines (each with its newline, if it has one); with `end`, only those within the first `end`
    bytes (whole_length's first figure: a torn tail is never read)."""
    with path.open("rb") as f:
        read = 0
        if end == 0:
            return
        for line in f:
            if end is not None and read + len(line) > end:
                return
            read += len(line)
            yield line
            if read == end:  # stop before the iterator reads on into a torn line
                return


def iter_events(path: Path, end: int | None = None) -> Iterator[dict[str, Any]]:
    """events.jsonl streamed line by line, never loaded whole; a line that is not a JSON object
    (a run killed mid-write) is skipped. Nothing when it does not exist or is not a regular file (a FIFO).
    `end`: only the records in the first `end` bytes (see iter_lines)."""
    if not path.is_file():
        return
    for line in iter_lines(path, end):
        try:
            record = json.loads(line.decode("utf-8", errors="replace"))
        except json.JSONDecodeError:
            continue
        if isinstance(record, dict):
            yield record
