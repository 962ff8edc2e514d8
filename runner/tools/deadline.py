"""The run's deadline inside a tool. Every tool gets it as `ToolContext.deadline` (time.monotonic(), None for no
limit) and must not run past it: a tool that waits (a process, a socket) waits at most until then; a tool that
computes checks `expired` between steps; and a step that can run on without returning to Python — a regular
expression that backtracks (`(a+)+$`), a walk of a huge tree, a server that sends one header byte a second — runs
inside `until(deadline)`, which stops it where it is.

`until` arms SIGALRM for the deadline: Python runs a signal handler between bytecodes and `re` checks for one
every few thousand steps, so the handler's exception (Late) ends even a match that would take hours. Only what may
be abandoned half-way goes inside (reading, matching, a request whose socket is closed on the way out), never a
write or a process start. Signal handlers run on the main thread, where the loop runs tools; elsewhere `until`
does nothing and only the checks between steps hold.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType


class Late(Exception):
    """The deadline passed inside `until`."""


def remaining(deadline: float | None) -> float | None:
    """Seconds left before `deadline` (never below 0); None for no deadline."""
    return None if deadline is None else max(0.0, deadline - time.monotonic())


def expired(deadline: float | None) -> bool:
    return deadline is not None and time.monotonic() >= deadline


def why_stopped(abort: threading.Event, deadline: float | None) -> str | None:
    """Why a tool that checks between steps must stop now (the run is stopping, or its time is up); None: go on."""
    if abort.is_set():
        return "the run is stopping"
    if expired(deadline):
        return "the run's time is up"
    return None


@contextmanager
def until(deadline: float | None) -> Iterator[None]:
    """Raise Late inside the block when `deadline` passes (at once when it has). Nests: an inner block keeps the
    earlier of the two deadlines and gives the outer one back its timer on the way out."""
    on_main = threading.current_thread() is threading.main_thread()
    if deadline is None or not on_main or not hasattr(signal, "setitimer"):
        yield
        return
    left = deadline - time.monotonic()
    if left <= 0:
        raise Late()
    armed = True

    def ring(signum: int, frame: FrameType | None) -> None:
        if armed:  # a signal that was already on its way when the block ended is dropped
            raise Late()

    previous = signal.signal(signal.SIGALRM, ring)
    outer, _ = signal.setitimer(signal.ITIMER_REAL, left)
    if outer and outer < left:  # an enclosing block's deadline comes first: it stays
        signal.setitimer(signal.ITIMER_REAL, outer)
    started = time.monotonic()
    try:
        yield
    finally:
        armed = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, signal.SIG_DFL if previous is None else previous)
        if outer:
            signal.setitimer(signal.ITIMER_REAL, max(1e-6, outer - (time.monotonic() - started)))
