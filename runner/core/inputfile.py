"""The workflow's own input files (the task file, `--policy`, `--mcp-config`, `--output-schema`,
`--instructions`, `--agents` profiles, `--env-file`): trusted in content, but still only ever read as a
regular file of bounded size. A FIFO (process substitution `<(…)` is one) would block the run before its
clock can stop it, and a device such as /dev/zero would be read until memory runs out.

Symlinks are followed: mounted config files (Kubernetes ConfigMaps, CI secrets) are often links. The
open never waits (O_NONBLOCK: opening a FIFO for reading would otherwise block until a writer comes), and
fstat on the open file decides, so nothing swapped in between a check and the read is read.
Repository files have their own, stricter reader (runner/workspace/repofile.py: no symlinks either).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from runner.core.outcome import UsageError

MIB = 1 << 20
TASK_CAP = 1 * MIB  # a task is a prompt, not a data set
INPUT_CAP = 16 * MIB  # a 5,000-rule policy fits many times over

_KINDS = ((stat.S_ISFIFO, "a FIFO or pipe"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISDIR, "a directory"), (stat.S_ISSOCK, "a socket"))


class InputRefused(UsageError):
    """The input is not a regular file, or is over its cap: exit 2, the message naming the option."""

    def __init__(self, option: str, detail: str) -> None:
        super().__init__(f"{option}: {detail}")
        self.option, self.detail = option, detail


def _cap_text(cap: int) -> str:
    return f"{cap // MIB} MiB" if cap % MIB == 0 else f"{cap:,} bytes"


def read_input(path: str | os.PathLike[str], option: str, cap: int = INPUT_CAP) -> bytes:
    """The whole file at `path`, at most `cap` bytes. InputRefused (a UsageError) when it is not a regular
    file or is larger than `cap`; OSError as the open raised it (no such file, permission) for the caller to
    word."""
    shown = os.fsdecode(path)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)  # follows symlinks; never waits for a writer
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = next((name for test, name in _KINDS if test(mode)), "not a file")
            raise InputRefused(option, f"{shown} is not a regular file ({kind}); name a file (a pipe, process "
                                       "substitution <(…) or a device is refused)")
        size = os.fstat(fd).st_size
        if size > cap:  # a sparse file is refused unread
            raise InputRefused(option, f"{shown} is {size:,} bytes, over the {_cap_text(cap)} limit")
        data = bytearray()
        while len(data) <= cap and (chunk := os.read(fd, min(MIB, cap + 1 - len(data)))):
            data += chunk
        if len(data) > cap:  # it grew while read
            raise InputRefused(option, f"{shown} is over the {_cap_text(cap)} limit")
        return bytes(data)
    finally:
        os.close(fd)


def read_input_text(path: str | os.PathLike[str], option: str, cap: int = INPUT_CAP) -> str:
    """As read_input, decoded as UTF-8 (UnicodeDecodeError for the caller to word)."""
    return read_input(Path(path), option, cap).decode("utf-8")
