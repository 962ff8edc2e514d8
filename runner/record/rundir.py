"""The run directory: events.jsonl (append-only), summary.json (atomic), copies
of the task and of the resolved policy.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import json
import os
import secrets
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from runner.core.jsonutil import MAX_DEPTH, canonical, nested_over
from runner.core.outcome import Failed
from runner.core.shown import shown, shown_obj
from runner.record.atomic import atomic_write
from runner.record.integrity import GENESIS, line_hash
from runner.record.jsonl import MAX_LINE_BYTES, iter_events

if TYPE_CHECKING:
    from runner.core.events import Event
    from runner.record.mask import Masker


def utc_now() -> str:
    """RFC 3339, UTC, millisecond precision."""
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def new_run_id() -> str:
    """Sortable: UTC time first, then a random suffix so parallel runs never collide."""
    return dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S%fZ") + "-" + secrets.token_hex(3)


def default_runs_dir(workspace: Path) -> Path:
    return workspace / ".agent-run" / "runs"


def runs_dir_for(given: str | None, workspace: Path) -> Path:
    """`--runs-dir` as given (resolved), else the workspace's default."""
    return Path(given).expanduser().resolve() if given else default_runs_dir(workspace)


def portable(path: Path | str, workspace: Path) -> str:
    """A path as the commands a run prints (and the records they read back) name it: relative to the
    workspace root when inside it (those commands are run from there, on the CI runner or on a laptop
    after downloading the artifact); outside it, relative to the root too when the person gave it
    relative (`../shared/policy.jsonc`), else as given (an absolute path outside the workspace)."""
    given = Path(path).expanduser()
    resolved = given.resolve()
    root = workspace.resolve()
    try:
        return resolved.relative_to(root).as_posix() or "."
    except ValueError:
        return str(given) if given.is_absolute() else os.path.relpath(resolved, root)


def run_ref(run_dir: Path, workspace: Path) -> str:
    """A run directory as the printed commands (`next:`, resume, replay, show) name it, run from the workspace
    root: relative to it inside it; outside it, relative too when the two share a directory below `/`
    (`--runs-dir ../runs`: `../runs/ID`, which a person reads and a moved checkout-with-runs keeps), else the
    absolute path (`/var/agent-runs/ID`, not `../../../var/...`)."""
    resolved, root = Path(run_dir).resolve(), workspace.resolve()
    if resolved.is_relative_to(root):
        return resolved.relative_to(root).as_posix() or "."
    if os.path.commonpath([resolved, root]) != os.path.sep:
        return os.path.relpath(resolved, root)
    return str(resolved)


def workspace_of(run_dir: Path) -> Path | None:
    """The workspace a run directory sits in by the default layout (WORKSPACE/.agent-run/runs/ID)."""
    parent = run_dir.resolve().parent
    if parent.name == "runs" and parent.parent.name == ".agent-run":
        return parent.parent.parent
    return None


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
    atomic_write(path, shown(text).encode("utf-8"))  # a name that is not UTF-8 (surrogateescape) as \xNN


def write_json(path: Path, data: object) -> None:
    text = json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    if shown(text) is not text:  # escaped in the values, so that the JSON stays JSON (`\\xNN` in the text)
        text = json.dumps(shown_obj(data), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    write_atomic(path, text)


class EventLog:
    """events.jsonl: one canonical JSON object per line, flushed per event so a
    killed run leaves every event it emitted on disk, each line whole. With a masker,
    each line is the masked record (secrets as `[REDACTED:kind]`, see runner.record.mask)."""

    def __init__(self, path: Path, run_id: str, mirror: TextIO | None = None, masker: Masker | None = None,
                 key: bytes | None = None) -> None:
        self.path = path
        self.run_id = run_id
        self.seq = 0
        # Unbuffered bytes: a failed write is known at once, and the torn tail can be cut back off.
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._good = os.fstat(self._fd).st_size  # the end of the last whole line
        self._mirror = mirror  # `--output-format stream-json`: the same lines, as they happen
        self._masker = masker
        self.key = key  # the audit key: `prev` is then the HMAC-SHA256 of the line (runner/record/integrity.py)
        self.head = GENESIS  # sha256 (or HMAC) of the last line written: the next record's `prev`
        self.broken: OSError | None = None  # set when a write failed: nothing more is recorded

    def __call__(self, event: Event) -> None:
        if self.broken is not None:
            return
        seq = self.seq + 1  # taken only once the line is written: a record that failed leaves no gap
        record = {"seq": seq, "ts": utc_now(), "run_id": self.run_id, "type": event.type, "prev": self.head,
                  "agent": event.agent, **event.fields()}
        if nested_over(record):  # what every reader refuses (record/jsonl.py), never written
            raise EventRefused(f"a {event.type} event nested deeper than {MAX_DEPTH} levels cannot be recorded")
        if self._masker is not None:
            record = self._masker.mask_record(record, event.content_field)
        line = canonical(record) + "\n"
        try:
            data = line.encode("utf-8")
        except UnicodeEncodeError:  # a name that is not UTF-8 (surrogateescape) reached a field: shown as \xNN
            line = canonical(shown_obj(record)) + "\n"
            data = line.encode("utf-8")
        if len(data) > MAX_LINE_BYTES:  # every reader's cap: the log holds no line they would leave out
            raise EventRefused(f"a {event.type} event of {len(data):,} bytes is over the event log's line limit "
                               f"({MAX_LINE_BYTES:,} bytes) and cannot be recorded")
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(self._fd, view):]
        except OSError as exc:
            # A full disk: cut the torn line off (shrinking frees space) so the log stays whole, and end
            # the run — a run that cannot record itself must not go on acting.
            self.broken = exc
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, self._good)
            raise LogBroken(f"cannot write {self.path.name}: {exc.strerror or exc}") from None
        self._good += len(data)
        self.seq = seq
        self.head = line_hash(line, self.key)
        if self._mirror is not None:
            self._mirror.write(line)
            self._mirror.flush()

    def close(self) -> None:
        # Nothing is written after this: a straggler (a call or child left on a daemon thread when the run ended on
        # its clock) would otherwise write to whatever file reused the descriptor's number.
        if self.broken is None:
            self.broken = OSError(errno.EBADF, "the event log is closed")
        with contextlib.suppress(OSError):
            os.close(self._fd)


class LogBroken(Failed):
    """The events log cannot be written (a full disk): the run ends `failed` with this reason."""


class EventRefused(Failed):
    """An event no reader of the log would take (over the line cap or the depth cap, record/jsonl.py): not
    written, and the run ends `failed` with this reason — a run that cannot record what it did must not go on.
    The log stays whole: the run's last events are still written."""


def read_events(path: Path) -> list[dict[str, Any]]:
    """A log's records, through its one reader (record/jsonl.py: a line past the line or depth cap, or not a
    JSON object, is left out)."""
    return list(iter_events(path))
