"""Reading an events.jsonl back: line by line, never loaded whole, never waiting on a FIFO. Below both the
run directory (rundir.py) and its integrity check (integrity.py), which both read logs.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def iter_events(path: Path) -> Iterator[dict[str, Any]]:
    """events.jsonl streamed line by line, never loaded whole; a line that is not a JSON object
    (a run killed mid-write) is skipped. Nothing when it does not exist or is not a regular file (a FIFO)."""
    if not path.is_file():
        return
    with path.open("r", encoding="utf-8", errors="replace") as f:
        for line in f:
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(record, dict):
                yield record
