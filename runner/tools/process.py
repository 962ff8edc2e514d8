"""One process's life under a `Cancel` (runner/tools/base.py), for every process a tool or a hook starts (bash,
grep's ripgrep, runner/run/hooks.py): started inside `starting_process` and tracked, so that an interrupt never finds
it running and not yet killable; waited for within the stop, the deadline and its own timeout; and its whole process
group killed once the wait ends — also when it exited by itself, so that what it left in the background (`cmd &`)
dies with it, as in CI it must.
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from runner.tools.base import Cancel

STOP_GRACE_S = 0.2  # an interrupted run must finish within ~2 s: its processes get less grace
REAP_S = 5.0  # how long a killed process (and a pump still reading its pipes) is waited for, at most

Pump = Callable[["subprocess.Popen[bytes]"], None]


@dataclass(frozen=True)
class Ended:
    """How a process's life ended. `exited`: it exited before the wait ended (False: the stop, the deadline or the
    timeout came first, and it was killed); `stopping`: the stop was asked when the wait ended; `returncode` is read
    after the kill (a negative signal number for a process the kill ended)."""

    pid: int
    returncode: int | None
    exited: bool
    stopping: bool


def run_process(cancel: Cancel, argv: list[str], *, timeout: float | None = None, pumps: Sequence[Pump] = (),
                grace_s: float = 0.0, **popen: Any) -> Ended:
    """Runs `argv` (`popen`: subprocess.Popen's keywords; always a session and process group of its own) until it
    exits, `cancel` stops, its deadline or `timeout` passes. Each of `pumps` reads the process's pipes on a thread
    of its own from its start; they are joined (REAP_S at most, all together: a grandchild that escaped the group
    may hold a pipe) once the group is killed. The kill: SIGTERM, `grace_s` (at most STOP_GRACE_S once the stop is
    asked), then SIGKILL; SIGKILL at once for `grace_s` 0 or a process that exited. Raises OSError when it cannot start
    (nothing runs), and what interrupts the wait (an interrupt of the run) once its group is killed."""
    proc: subprocess.Popen[bytes] | None = None
    threads: list[threading.Thread] = []
    # From the fork on, an interrupt may land anywhere (even while a pump starts): one that lands while the process
    # starts is held until it is tracked, then raised inside this try, so the group is always killed.
    try:
        with cancel.starting_process() as track:
            proc = subprocess.Popen(argv, start_new_session=True, **popen)
            track(proc.pid)  # its own group (start_new_session): a hurried exit of the run kills it
        for pump in pumps:
            threads.append(threading.Thread(target=pump, args=(proc,), daemon=True))
            threads[-1].start()
        exited = cancel.wait(proc, timeout)
        stopping = cancel.stopping()
    finally:
        if proc is not None:
            kill_group(proc, min(grace_s, STOP_GRACE_S) if cancel.stopping() else grace_s)
            cancel.forget(proc.pid)  # gone: its number may be reused
            end = time.monotonic() + REAP_S  # one wait for all pumps: a grandchild holding both pipes costs REAP_S once
            for thread in threads:
                if thread.is_alive():
                    thread.join(timeout=max(0.0, end - time.monotonic()))
    assert proc is not None  # the finally above re-raised otherwise
    return Ended(proc.pid, proc.returncode, exited, stopping)


def reader(sink: Callable[[bytes], None], stream: str = "stdout") -> Pump:
    """A pump that hands what the process writes on `stream` (a pipe) to `sink` as it comes, until its end."""

    def pump(proc: subprocess.Popen[bytes]) -> None:
        pipe = getattr(proc, stream)
        assert isinstance(pipe, io.BufferedReader)  # a PIPE with the default buffering
        while chunk := pipe.read1(65536):
            sink(chunk)

    return pump


def kill_group(proc: subprocess.Popen[bytes], grace_s: float) -> None:
    """Ends `proc`'s process group: SIGTERM and `grace_s` for the leader to exit, then SIGKILL to what is left."""
    if proc.poll() is not None or grace_s <= 0:
        # The leader is gone (or gets no grace): whatever is left of its group is killed at once.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=REAP_S)
        return
    for sig, wait in ((signal.SIGTERM, grace_s), (signal.SIGKILL, REAP_S)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            # The leader is gone; children may not be. SIGKILL the rest of the group.
            os.killpg(proc.pid, signal.SIGKILL)
            return
        except ProcessLookupError:
            return
        except subprocess.TimeoutExpired:
            continue
