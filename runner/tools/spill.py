"""Spill files: the full output of a truncated tool result, kept in the run directory.

`Spill` streams bytes to `<run_dir>/outputs/tool_<time>_<random>` as they arrive,
keeping only a bounded head and tail in memory, so a command printing gigabytes
leaves memory flat and the whole output on disk. With a masker the file holds the
masked text (runner.record.mask), while the head and tail the model reads do not.

When `outputs/` cannot be written (a full disk, a read-only mount) a spill goes to the run's
fallback directory in `$RUNNER_TEMP` (else the system temp dir): nothing cut is silently lost.
Where it went is the result's `output_path`, and why is its `spill_fallback`.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import os
import secrets
import shutil
import stat
import tempfile
import time
from collections.abc import Callable, Collection
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from runner.record.mask import MaskedStream
from runner.tools.truncate import Limits, Truncation, render, truncate_head, truncate_tail

if TYPE_CHECKING:
    from runner.record.mask import Masker


SPILL_GLOB = "tool_*"
STAMP_FORMAT = "%Y%m%dT%H%M%S%f"


def new_spill_path(outputs_dir: Path, ttl_days: float | None = None) -> Path:
    if not outputs_dir.exists() and ttl_days is not None:
        # This run's first spill: the moment to clear old spill files of every run (once, lazily).
        remove_older_than(outputs_dir.parent.parent, ttl_days * 86400, spills_only=True)
    outputs_dir.mkdir(parents=True, exist_ok=True)
    return outputs_dir / _spill_name()


def _spill_name() -> str:
    return f"tool_{dt.datetime.now(dt.UTC).strftime(STAMP_FORMAT)}_{secrets.token_hex(4)}"


def fallback_dir(outputs_dir: Path) -> Path:
    """Where this run's spills go when `outputs_dir` cannot be written: one directory per outputs directory
    (its name a hash of that path, so memory_search and the policy's own-outputs rule find it without a record)
    in `$RUNNER_TEMP` (a CI job's own temp dir, emptied with the job), else the system temp dir."""
    base = Path(os.environ.get("RUNNER_TEMP") or tempfile.gettempdir())
    digest = hashlib.sha256(str(outputs_dir.absolute()).encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return base / f"agent-run-outputs-{digest}"


def new_fallback_path(outputs_dir: Path) -> Path:
    """A new spill path in the fallback directory, made private (0700) on first use. A directory there that is
    not ours (another user of a shared /tmp made it first, or a symlink) is refused: OSError."""
    where = fallback_dir(outputs_dir)
    try:
        where.mkdir(mode=0o700)
    except FileExistsError:
        st = os.lstat(where)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o022:
            raise PermissionError(f"{where} exists and is not a private directory of this user") from None
    return where / _spill_name()


def spill_dirs(outputs_dir: Path | None) -> list[Path]:
    """The directories that may hold this run's spill files."""
    return [] if outputs_dir is None else [outputs_dir, fallback_dir(outputs_dir)]


def spill_time(path: Path) -> dt.datetime | None:
    """When a spill file was made, from its name (UTC); None for another name."""
    try:
        return dt.datetime.strptime(path.name.split("_")[1], STAMP_FORMAT).replace(tzinfo=dt.UTC)
    except (IndexError, ValueError):
        return None


class Spill:
    """A byte sink: the whole stream to a file, a head and a tail window in memory."""

    def __init__(self, outputs_dir: Path | None, window: int, ttl_days: float | None = None,
                 masker: Masker | None = None) -> None:
        self.outputs_dir = outputs_dir
        self.error: str | None = None  # why the full output could not be kept (a full disk)
        self.fallback: str | None = None  # why it went to the fallback directory instead of outputs/
        self.path: Path | None = None
        self._file: BinaryIO | None = None
        self._written = 0  # bytes known to be in the file: what a move to the fallback copies
        if outputs_dir is not None:
            try:
                self.path = new_spill_path(outputs_dir, ttl_days)
                self._file = open(self.path, "wb", buffering=0)  # noqa: SIM115 - closed by close()/discard()
            except OSError as exc:
                self._file, self.path = None, None
                self._to_fallback(exc, b"")
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
        """Unbuffered, counted: on a full disk what is on disk is known to the byte, so the file moves whole to
        the fallback directory and goes on there. Failing that too costs the spill file, never the command or
        the run: memory keeps head and tail."""
        assert self._file is not None
        view = memoryview(data)
        try:
            while view:
                n = self._file.write(view) or 0
                self._written += n
                view = view[n:]
        except OSError as exc:
            self._to_fallback(exc, bytes(view))

    def _to_fallback(self, exc: OSError, rest: bytes) -> None:
        """Go on in the fallback directory: what was written so far, then `rest`."""
        old, written = self.path, self._written
        if self._file is not None:
            with contextlib.suppress(OSError):
                self._file.close()
        self._file = None
        if self.fallback is not None or self.outputs_dir is None:  # the fallback failed too
            self.error = str(exc)
            self._drop_file()
            return
        self.fallback = str(exc)
        try:
            self.path = new_fallback_path(self.outputs_dir)
            self._file = open(self.path, "wb", buffering=0)  # noqa: SIM115 - closed by close()/discard()
            self._written = 0
            if old is not None:
                with old.open("rb") as src:
                    while written > 0 and self._file is not None and (chunk := src.read(min(written, 1 << 20))):
                        written -= len(chunk)
                        self._file_write(chunk)
        except OSError as again:
            self.error = f"{exc}; fallback: {again}"
            self._drop_file()
        if old is not None:
            with contextlib.suppress(OSError):
                old.unlink()
        if self._file is not None and rest:
            self._file_write(rest)

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
        if self.fallback is not None and path is not None:
            details["spill_fallback"] = self.fallback
        return render(shown, path, from_end=from_end, delegate=limits.delegate), details

    def discard(self) -> None:
        self._masked = None  # what it holds back is never written
        self.close()
        if self.path is not None:
            with contextlib.suppress(OSError):  # gone with its directory (a command removed it): nothing to drop
                self.path.unlink()
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
    path, fallback = keep_where(outputs_dir, text, limits.ttl_days, masker) if outputs_dir else (None, None)
    details["output_path"] = path
    if fallback is not None:
        details["spill_fallback"] = fallback
    return render(cut, path, from_end=from_end, delegate=limits.delegate), details


def keep(outputs_dir: Path, text: str, ttl_days: float | None = None, masker: Masker | None = None) -> str | None:
    """Write `text` (masked, with a masker) to a new spill file; returns its path, or None when it cannot
    be written (a full disk, and the fallback too): the result is still cut, only the full copy is missing."""
    return keep_where(outputs_dir, text, ttl_days, masker)[0]


def keep_where(outputs_dir: Path, text: str, ttl_days: float | None = None,
               masker: Masker | None = None) -> tuple[str | None, str | None]:
    """keep(), and why the file is in the fallback directory (None: it is in outputs_dir)."""
    data = (masker.mask(text)[0] if masker is not None else text).encode("utf-8")
    try:
        return _write_new(lambda: new_spill_path(outputs_dir, ttl_days), data), None
    except OSError as exc:
        try:
            return _write_new(lambda: new_fallback_path(outputs_dir), data), str(exc)
        except OSError:
            return None, None


def _write_new(new_path: Callable[[], Path], data: bytes) -> str:
    target = new_path()
    try:
        target.write_bytes(data)
    except OSError:
        with contextlib.suppress(OSError):
            target.unlink()
        raise
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
                if _real_dir(fallback := fallback_dir(run / "outputs")):  # its spills that outputs/ could not take
                    shutil.rmtree(fallback, ignore_errors=True)
            removed.append(run)
            continue
        for folder in spill_dirs(run / "outputs"):
            for spill in folder.glob(SPILL_GLOB) if _real_dir(folder) else []:
                if _mtime(spill, spill) < cutoff:
                    with contextlib.suppress(OSError):
                        if not dry_run:
                            spill.unlink()
                        removed.append(spill)
    return removed


def _real_dir(path: Path) -> bool:
    """A directory, not a symlink to one: cleanup never follows a link."""
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _mtime(path: Path, fallback: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return fallback.stat().st_mtime
