"""Replacing a file's content all at once: a reader sees the old bytes or the new, never half a write."""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from pathlib import Path


def atomic_write(path: Path, data: bytes) -> None:
    """Write `data` to `path` through a temp file in the same directory, fsync'd, then `os.replace`.

    An existing file keeps its permission bits (and, where allowed, its owner); a new file gets the
    default mode (0o666 less the umask); a file we may not write is refused, as writing in place would be.
    On any failure the temp file is removed and `path` is left as it was; the OSError propagates.
    The parent directory must exist.
    """
    try:
        old = path.stat()
    except FileNotFoundError:
        old = None
    if old is not None and stat.S_ISREG(old.st_mode) and not os.access(path, os.W_OK):
        # Replacing needs only the directory's permission; a read-only file stays as protected as in place.
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))
    # Hidden, recognisable, and short enough that a long file name does not make it too long.
    tmp = path.with_name(f".{path.name[:200]}.{secrets.token_hex(4)}.tmp")
    # O_EXCL: never reuse (or follow a symlink at) an existing name; 0o666 lets the kernel apply the umask.
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            if old is not None and stat.S_ISREG(old.st_mode):
                if (old.st_uid, old.st_gid) != (os.geteuid(), os.getegid()):
                    with contextlib.suppress(OSError):  # only root (or the owner, for the group) may
                        os.fchown(f.fileno(), old.st_uid, old.st_gid)
                os.fchmod(f.fileno(), stat.S_IMODE(old.st_mode))  # after chown, which may clear setuid
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    # The rename itself is durable only once the directory is; best effort (not every platform allows it).
    with contextlib.suppress(OSError):
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
