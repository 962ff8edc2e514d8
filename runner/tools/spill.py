"""Spill files: the full output of a truncated tool result, kept in the run directory.

`Spill` streams bytes to `<run_dir>/outputs/tool_<time>_<random>` as they arrive,
keeping only a bounded head and tail in memory, so a command printing gigabytes
leaves memory flat and the whole output on disk. With a masker the file holds the
masked text (runner.record.mask), while the head and tail the model reads do not.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import secrets
import shutil
import time
from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING

from runner.record.mask import MaskedStream
from runner.tools.truncate import Limits, Truncation, render, truncate_head, truncate_tail

if TYPE_CHECKING:
    from runner.record.mask import Masker


def new_spill_path(outputs_dir: Path, ttl_days: float | None = None) -> Path:
    if not outputs_dir.exists() and ttl_days is not None:
        # This run's first spill: the moment to clear old spill files of every run (once, lazily).
        remove_older_than(outputs_dir.parent.parent, ttl_days * 86400, spills_only=True)
    outputs_dir.mkdir(parents=True, exist_ok=True)
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S%f")
    return outputs_dir / f"tool_{stamp}_{secrets.token_hex(4)}"


class Spill:
    """A byte sink: the whole stream to a file, a head and a tail window in memory."""

    def __init__(self, outputs_dir: Path | None, window: int, ttl_days: float | None = None,
                 masker: Masker | None = None) -> None:
        self.path = new_spill_path(outputs_dir, ttl_days) if outputs_dir is not None else None
        self.error: str | None = None  # why the full output could not be kept (a full disk)
        try:
            self._file = self.path.open("wb") if self.path is not None else None
        except OSError as exc:
            self._file, self.path, self.error = None, None, str(exc)
        # Bytes pass through as text with surrogateescape: invalid UTF-8 (and a character split between
        # chunks) comes out byte for byte as it went in.
        self._masked = MaskedStream(masker) if masker is not None and self._file is not None else None
        self.window = window
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0
        self.newlines = 0
        self.last_byte = b""
        self._sha = hashlib.sha256()

    def write(self, chunk: bytes) -> None:
        if not chunk:
            return
        if self._masked is not None:
            self._write(self._masked.feed(chunk.decode("utf-8", "surrogateescape")))
        elif self._file is not None:
            self._file_write(chunk)
        self._sha.update(chunk)
        self.total += len(chunk)
        self.newlines += chunk.count(b"\n")
        self.last_byte = chunk[-1:]
        room = self.window - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            del self.tail[: -self.window]

    def _write(self, text: str) -> None:
        if text and self._file is not None:
            self._file_write(text.encode("utf-8", "surrogateescape"))

    def _file_write(self, data: bytes) -> None:
        """A full disk costs the spill file, never the command or the run: memory keeps head and tail."""
        assert self._file is not None
        try:
            self._file.write(data)
        except OSError as exc:
            self.error = str(exc)
            self._drop_file()

    def _drop_file(self) -> None:
        file, self._file, self._masked = self._file, None, None
        if file is not None:
            with contextlib.suppress(OSError):
                file.close()
        if self.path is not None:
            with contextlib.suppress(OSError):
                self.path.unlink()
            self.path = None

    def close(self) -> None:
        if self._file is not None and not self._file.closed:
            if self._masked is not None:
                self._write(self._masked.end())
            if self._file is not None:
                try:
                    self._file.close()
                except OSError as exc:
                    self.error = str(exc)
                    self._drop_file()

    @property
    def lines(self) -> int:
        return self.newlines + (1 if self.total and self.last_byte != b"\n" else 0)

    @property
    def sha256(self) -> str:
        return self._sha.hexdigest()

    def complete(self) -> bool:
        """Whether memory holds the whole stream."""
        return not self.tail

    def text(self) -> str:
        """The whole stream when it is in memory; else head and tail with the gap marked."""
        head = bytes(self.head).decode("utf-8", errors="replace")
        if self.complete():
            return head
        gap = self.total - len(self.head) - len(self.tail)
        return head + (f"\n[… {gap} bytes …]\n" if gap > 0 else "") + bytes(self.tail).decode("utf-8", "replace")

    def finish(self, limits: Limits, *, from_end: bool) -> tuple[str, dict[str, object]]:
        """The content for the model and the details for the log; drops the file if nothing was cut.
        `sha256` is of the whole output as the command printed it (unmasked)."""
        if self.total <= limits.max_bytes and self.lines <= limits.max_lines:
            self.discard()
            text = self.text()
            return text, {"truncated": False, "bytes": self.total, "lines": self.lines, "sha256": self.sha256}
        self.close()
        if from_end:
            # The last `window` bytes; when the stream began earlier, its first line is partial.
            part = bytes(self.head + self.tail)[-self.window:]
            starts_mid = self.total > len(part)
            part = part.split(b"\n", 1)[1] if starts_mid and b"\n" in part[:-1] else part
        else:
            part = bytes(self.head)
            ends_mid = self.total > len(part)
            part = part[: part.rfind(b"\n") + 1] if ends_mid and b"\n" in part else part
        cut = (truncate_tail if from_end else truncate_head)(part.decode("utf-8", errors="ignore"), limits)
        shown = Truncation(cut.text, True, self.lines, self.total, cut.kept_lines, cut.kept_bytes,
                           "bytes" if self.total > limits.max_bytes else "lines")
        path = str(self.path) if self.path is not None else None
        details: dict[str, object] = {"truncated": True, "output_path": path, "bytes": self.total,
                                      "lines": self.lines, "sha256": self.sha256}
        if self.error is not None:
            details["spill_error"] = self.error
        return render(shown, path, from_end=from_end, delegate=limits.delegate), details

    def discard(self) -> None:
        self._masked = None  # what it holds back is never written
        self.close()
        if self.path is not None:
            self.path.unlink(missing_ok=True)
            self.path = None


def spill_text(outputs_dir: Path | None, text: str, limits: Limits, *, from_end: bool,
               masker: Masker | None = None) -> tuple[str, dict]:
    """Truncate an in-memory result; the full text (masked) goes to a spill file only when cut."""
    cut = (truncate_tail if from_end else truncate_head)(text, limits)
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    details: dict[str, object] = {"truncated": cut.truncated, "bytes": cut.total_bytes, "lines": cut.total_lines,
                                  "sha256": digest}
    if not cut.truncated:
        return text, details
    path = keep(outputs_dir, text, limits.ttl_days, masker) if outputs_dir is not None else None
    details["output_path"] = path
    return render(cut, path, from_end=from_end, delegate=limits.delegate), details


def keep(outputs_dir: Path, text: str, ttl_days: float | None = None, masker: Masker | None = None) -> str | None:
    """Write `text` (masked, with a masker) to a new spill file; returns its path, or None when it cannot
    be written (a full disk): the result is still cut, only the full copy is missing."""
    target = new_spill_path(outputs_dir, ttl_days)
    try:
        target.write_text(masker.mask(text)[0] if masker is not None else text, encoding="utf-8")
    except OSError:
        with contextlib.suppress(OSError):
            target.unlink()
        return None
    return str(target)


def remove_older_than(runs_dir: Path, max_age_s: float, *, spills_only: bool, dry_run: bool = False,
                      keep_runs: Collection[Path] = ()) -> list[Path]:
    """Spill files (and, unless spills_only, whole run directories) older than max_age_s; the run directories
    in `keep_runs` (a kept run's ancestors: cli/cleanup.py) are left whole."""
    cutoff = time.time() - max_age_s
    removed: list[Path] = []
    if not runs_dir.is_dir():
        return removed
    from runner.record.lock import is_locked  # cleanup only

    for run in sorted(p for p in runs_dir.iterdir() if p.is_dir()):
        # Still running (or being resumed): never pulled from under it; in keep_runs: a kept run goes on from it.
        if is_locked(run) is not None or run in keep_runs:
            continue
        if not spills_only and _mtime(run / "summary.json", run) < cutoff:
            if not dry_run:
                shutil.rmtree(run, ignore_errors=True)
            removed.append(run)
            continue
        for spill in (run / "outputs").glob("tool_*") if (run / "outputs").is_dir() else []:
            if _mtime(spill, spill) < cutoff:
                with contextlib.suppress(OSError):
                    if not dry_run:
                        spill.unlink()
                    removed.append(spill)
    return removed


def _mtime(path: Path, fallback: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return fallback.stat().st_mtime
