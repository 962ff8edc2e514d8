"""Who is using a run directory or a workspace right now.

A run holds `RUN_DIR/.lock` for as long as it runs; `resume`, `fork` and `replay` take the lock
of the run they continue, so a run that is still going (or is being resumed already) cannot be
continued twice. The file says who holds it — `{pid, hostname, boot_id, started, run_id}` — and the
holder keeps an `flock` on it: the kernel drops that the moment the process dies, SIGKILL included,
so liveness never rests on a pid (which containers reuse). A lock file left by a dead holder is
taken over, and the takeover is recorded by the caller. A `.lock` that is not a regular file (a
directory, a FIFO, a symlink, left or planted) cannot be held: that refuses the run (LockUnusable)
rather than letting it go on unlocked beside another, unless the directory is on a read-only mount
(an unpacked artifact), which no second process can write to either.

A workspace is locked the same way, on the workspace directory itself (no file the agent could
delete): one run at a time unless `--shared-workspace`; the holder's details are found in the
runs directory's live `.lock` files.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import fcntl
import json
import os
import socket
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

LOCK_NAME = ".lock"


class LockUnusable(Exception):
    """The lock file cannot be taken although the directory is writable: refuse, never run unlocked."""

    def __init__(self, path: Path, why: str) -> None:
        self.path = path
        super().__init__(f"cannot lock {path}: {why}; nothing can then keep a second process out, so nothing was "
                         "started (remove it if no agent-run process is using the run)")


class LockHeld(Exception):
    """Another live process holds the lock; `holder` is what its lock file says (may be empty)."""

    def __init__(self, what: str, holder: dict[str, Any]) -> None:
        self.what = what
        self.holder = holder
        super().__init__(f"{what} is in use by {describe_holder(holder)}")


def describe_holder(holder: dict[str, Any]) -> str:
    if not holder:
        return "another agent-run process"
    where = f" on {holder['hostname']}" if holder.get("hostname") and holder["hostname"] != socket.gethostname() else ""
    run = f" (run {holder['run_id']})" if holder.get("run_id") else ""
    return f"pid {holder.get('pid', '?')}{where}, started {holder.get('started', '?')}{run}"


def boot_id() -> str:
    """Tells two boots (or two machines) apart, where a pid means nothing."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text(encoding="ascii").strip()
    except OSError:
        return ""


def holder_info(run_id: str | None = None) -> dict[str, Any]:
    info: dict[str, Any] = {"pid": os.getpid(), "hostname": socket.gethostname(), "boot_id": boot_id(),
                            "started": dt.datetime.now(dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")}
    if run_id:
        info["run_id"] = run_id
    return info


def read_holder(path: Path) -> dict[str, Any]:
    try:
        fd = _open_lock(path, os.O_RDONLY)
        try:
            data = json.loads(os.read(fd, 64 * 1024).decode("utf-8"))
        finally:
            os.close(fd)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _open_lock(path: Path, flags: int) -> int:
    """A lock file, opened as nothing else: never through a symlink (a run directory unpacked from elsewhere
    could hold one, and the file is truncated and written), never blocking on a FIFO; OSError otherwise."""
    fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o644)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, "not a regular file", str(path))
    return fd


@dataclass
class Lock:
    path: Path
    fd: int
    taken_over: dict[str, Any] | None  # the dead holder's record, when its lock file was left behind

    def release(self) -> None:
        if self.fd < 0:
            return
        # Unlink while still holding the flock: a process that opens the path after this gets a new file.
        with contextlib.suppress(OSError):
            if os.path.samestat(os.fstat(self.fd), os.stat(self.path)):
                os.unlink(self.path)
        with contextlib.suppress(OSError):
            os.close(self.fd)
        self.fd = -1


def on_read_only_mount(path: Path) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def acquire(run_dir: Path, what: str, run_id: str | None = None) -> Lock:
    """Take `run_dir/.lock` or raise LockHeld at once (never waits). Raises OSError when the
    directory is on a read-only mount (it cannot hold a lock file, and nobody can write it), and
    LockUnusable when the lock file cannot be opened as one otherwise (not a regular file, no permission)."""
    path = run_dir / LOCK_NAME
    while True:
        try:
            fd = _open_lock(path, os.O_RDWR | os.O_CREAT)
        except OSError as exc:
            if exc.errno == errno.EROFS or on_read_only_mount(run_dir):
                raise
            why = "it is a symlink" if exc.errno == errno.ELOOP else (exc.strerror or str(exc))
            if exc.errno in (errno.EISDIR, errno.EINVAL, errno.ENXIO):
                why = "it is not a regular file"
            raise LockUnusable(path, why) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = read_holder(path)
            os.close(fd)
            raise LockHeld(what, holder) from None
        try:
            same = os.path.samestat(os.fstat(fd), os.stat(path))
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)  # the holder released (unlinked) it between our open and our flock: try the new file
    previous = read_holder(path)
    data = (json.dumps(holder_info(run_id), sort_keys=True) + "\n").encode("utf-8")
    os.ftruncate(fd, 0)
    os.pwrite(fd, data, 0)
    return Lock(path, fd, previous or None)


def is_locked(run_dir: Path) -> dict[str, Any] | None:
    """The holder of a live lock on this run directory, else None (no lock, or a dead holder's file)."""
    path = run_dir / LOCK_NAME
    try:
        fd = _open_lock(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return read_holder(path)
    finally:
        os.close(fd)
    return None


@dataclass
class WorkspaceLock:
    fd: int

    def release(self) -> None:
        if self.fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = -1


def lock_workspace(workspace: Path, runs_dir: Path) -> WorkspaceLock:
    """An exclusive flock on the workspace directory; LockHeld naming the running run when taken."""
    fd = os.open(workspace, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise LockHeld(f"workspace {workspace}", running_holder(runs_dir)) from None
    return WorkspaceLock(fd)


def running_holder(runs_dir: Path) -> dict[str, Any]:
    """The newest run in runs_dir whose lock is live (who holds the workspace, most likely)."""
    with contextlib.suppress(OSError):
        for run_dir in sorted((p for p in runs_dir.iterdir() if p.is_dir()), reverse=True):
            holder = is_locked(run_dir)
            if holder is not None:
                return holder
    return {}
