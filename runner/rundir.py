"""The run directory: events.jsonl (append-only), summary.json (atomic), copies
of the task and of the resolved policy.
"""

from __future__ import annotations

import datetime as dt
import json
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from runner.events import Event
from runner.integrity import GENESIS, line_hash
from runner.jsonutil import canonical
from runner.tools.atomic import atomic_write

if TYPE_CHECKING:
    from runner.mask import Masker


def utc_now() -> str:
    """RFC 3339, UTC, millisecond precision."""
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def new_run_id() -> str:
    """Sortable: UTC time first, then a random suffix so parallel runs never collide."""
    return dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S%fZ") + "-" + secrets.token_hex(3)


def default_runs_dir(workspace: Path) -> Path:
    return workspace / ".agent-run" / "runs"


def create_run_dir(runs_dir: Path, workspace: Path) -> tuple[str, Path]:
    state = workspace / ".agent-run"
    if runs_dir.resolve().is_relative_to(state.resolve()):
        state.mkdir(parents=True, exist_ok=True)
        ignore = state / ".gitignore"
        if not ignore.exists():
            ignore.write_text("*\n", encoding="utf-8")
    run_id = new_run_id()
    path = runs_dir / run_id
    path.mkdir(parents=True, exist_ok=False)
    return run_id, path


def write_atomic(path: Path, text: str) -> None:
    """Temp file in the same directory + rename: a reader never sees half a file."""
    atomic_write(path, text.encode("utf-8"))


def write_json(path: Path, data: Any) -> None:
    write_atomic(path, json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


class EventLog:
    """events.jsonl: one canonical JSON object per line, flushed per event so a
    killed run leaves every event it emitted on disk, each line whole. With a masker,
    each line is the masked record (secrets as `[REDACTED:kind]`, see runner.mask)."""

    def __init__(self, path: Path, run_id: str, mirror: TextIO | None = None, masker: Masker | None = None) -> None:
        self.path = path
        self.run_id = run_id
        self.seq = 0
        self._file: TextIO = path.open("a", encoding="utf-8")
        self._mirror = mirror  # `--output-format stream-json`: the same lines, as they happen
        self._masker = masker
        self.head = GENESIS  # sha256 of the last line written: the next record's `prev`

    def __call__(self, event: Event) -> None:
        self.seq += 1
        record = {"seq": self.seq, "ts": utc_now(), "run_id": self.run_id, "type": event.type, "prev": self.head,
                  **event.fields()}
        if self._masker is not None:
            record = self._masker.mask_record(record, event.content_field)
        line = canonical(record) + "\n"
        self._file.write(line)
        self._file.flush()
        self.head = line_hash(line)
        if self._mirror is not None:
            self._mirror.write(line)
            self._mirror.flush()

    def close(self) -> None:
        self._file.close()


def iter_events(path: Path) -> Iterator[dict[str, Any]]:
    """events.jsonl streamed line by line, never loaded whole; a line that is not a JSON object
    (a run killed mid-write) is skipped. Nothing when the file does not exist."""
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


def read_events(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
