"""Process checks for tests that kill things."""

from __future__ import annotations

import os
import time
from pathlib import Path


def is_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # A killed child reparented to an init that has not reaped it yet is a zombie: dead all the same.
    stat = Path(f"/proc/{pid}/stat")
    try:
        return stat.read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return False


def wait_gone(pid: int, grace_s: float = 30.0) -> bool:
    """True once `pid` is gone; False if it is still there after `grace_s` (which only stops a hang:
    a process that is going usually goes in milliseconds, but a loaded machine may take seconds)."""
    end = time.monotonic() + grace_s
    while time.monotonic() < end:
        if is_gone(pid):
            return True
        time.sleep(0.05)
    return is_gone(pid)
