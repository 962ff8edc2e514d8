"""Repository files the runner reads itself (AGENTS.md, skills, subagent profiles): they are the
workspace's, so untrusted in shape as well as content. Only a regular file is read — never through a
symlink, never a FIFO or a device (which would block the run before its clock can stop it) — and only
its first `cap` bytes are kept, however large it is."""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from pathlib import Path


def read_capped(path: Path, cap: int, *, digest: bool = True) -> tuple[bytes, int, str | None]:
    """The file's first `cap` bytes, its size and (with `digest`) the sha256 of all of it, which reads it
    whole; without, nothing past `cap` is read. OSError for anything but a regular file (a symlink, a FIFO,
    a directory)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)  # no follow, no wait: checked after open
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        whole, head, size = hashlib.sha256(), bytearray(), 0
        while (digest or len(head) < cap) and (chunk := os.read(fd, 1 << 20 if digest else cap - len(head))):
            size += len(chunk)
            whole.update(chunk)
            head += chunk[: max(cap - len(head), 0)]
    finally:
        os.close(fd)
    return bytes(head), max(size, st.st_size), whole.hexdigest() if digest else None
