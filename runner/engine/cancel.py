"""The run's Cancel (the contract is runner/tools/base.py `Cancel`): one event and one time.monotonic() deadline,
the same on every thread — no alarm signal, no interval timer, nothing only the main thread sees.

The root is the run's: the recorder's signal handler (runner/engine/recorder.py) stops it; the run's agent works
under a child of it that has the run's wall clock (runner/run/assemble.py call_env). A group of calls
(runner/engine/batch.py) and a child agent (runner/subagents/delegate.py) get a child too: stopping a parent stops
every child (their events are set at once, so a wait wakes), a child stops alone, and a child's deadline is never
later than its parent's.

The root also holds what a signal must not cut: while a process is being started (between the fork and the caller's
try/finally that kills its group) or an event is being written, an interrupt is held and raised on the way out; a
second signal then exits at once, after killing every process group still tracked."""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from typing import Any

from runner.core.outcome import Interrupted
from runner.tools.base import STOPPING, TIME_UP, Cancelled

POLL_S = 0.05  # how often a wait for a process looks at the stop (a pidfd wakes at the exit itself)


class RunCancel:
    """The run's Cancel, or a child of it (`child`)."""

    def __init__(self, parent: RunCancel | None = None, deadline: float | None = None,
                 time_up: str | None = None) -> None:
        self._event = _Flag()
        self._parent = parent
        self._root: RunCancel = parent._root if parent is not None else self
        self._deadline = _earlier(deadline, parent.deadline if parent is not None else None)
        # What `why` says once the deadline passes: `time_up` when this one's own deadline is the earlier one.
        inherited = parent._time_up if parent is not None else TIME_UP
        own = deadline is not None and (parent is None or parent.deadline is None or deadline < parent.deadline)
        self._time_up: str = time_up if own and time_up else inherited
        self._children: list[weakref.ref[RunCancel]] = []
        self._lock = threading.Lock()
        self._groups: set[int] = set()  # process groups started under this stop and not killed yet
        # The root's alone: the interrupt, and the holds around process starts and event writes.
        self._signalled: int | None = None
        self._active = 0  # blocks holding an interrupt
        self._pending: int | None = None  # an interrupt held until the last of them leaves
        self._exiting: int | None = None  # a second signal while one is held: exit once the process is tracked

    # ---- the contract ------------------------------------------------------------------------------------------

    @property
    def deadline(self) -> float | None:
        return self._deadline

    @property
    def signalled(self) -> int | None:
        return self._root._signalled

    def stopping(self) -> bool:
        return self._event.is_set()

    def why(self) -> str | None:
        if self._event.is_set():
            return STOPPING
        if self._deadline is not None and time.monotonic() >= self._deadline:
            return self._time_up
        return None

    def check(self) -> None:
        why = self.why()
        if why is not None:
            raise Cancelled(why)

    def remaining(self) -> float | None:
        return None if self._deadline is None else max(0.0, self._deadline - time.monotonic())

    def sleep(self, seconds: float) -> bool:
        return self._event.wait(max(0.0, seconds))

    def wait(self, proc: subprocess.Popen[Any], timeout: float | None = None) -> bool:
        end = _earlier(None if timeout is None else time.monotonic() + timeout, self._deadline)
        with _ExitWaiter(proc) as exited:
            while proc.poll() is None:
                if self._event.is_set():
                    return False
                left = None if end is None else end - time.monotonic()
                if left is not None and left <= 0:
                    return False
                exited.wait(POLL_S if left is None else min(POLL_S, left))
        return True

    @contextlib.contextmanager
    def starting_process(self) -> Iterator[Callable[[int], None]]:
        with self.held():
            yield self._track

    def forget(self, pgid: int) -> None:
        node: RunCancel | None = self
        while node is not None:
            node._groups.discard(pgid)
            node = node._parent

    def child(self, deadline: float | None = None, time_up: str | None = None) -> RunCancel:
        child = RunCancel(self, deadline, time_up)
        with self._lock:
            self._children = [ref for ref in self._children if ref() is not None]
            self._children.append(weakref.ref(child))
        if self._event.is_set():  # after it is listed: a stop in between reaches it either way
            child._event.set()
        return child

    def stop(self) -> None:
        self._event.set()
        # Every child, even under one stopped already: the signal handler calls this on the main thread, perhaps in
        # the middle of a group's own stop there (and raises once done). The list is copied in one step: the main
        # thread may be between two steps of `child`, and other threads make children too.
        for ref in list(self._children):
            child = ref()
            if child is not None:
                child.stop()

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """A block an interrupt must not cut (a process start, an event being written): one that lands inside is
        raised on the way out, by whichever thread's block ends the last hold (on a worker, its call's result
        carries it to the loop)."""
        root = self._root
        with root._lock:
            root._active += 1
        try:
            yield
        finally:
            root._leave()

    # ---- the run's own (the signal handler, the record's end) ----------------------------------------------------

    def interrupt(self, signum: int) -> bool:
        """For the signal handler's first signal: everything stops; True when the interrupt is held (a process is
        being started, an event written: it is raised once that is done), False when the handler raises it."""
        root = self._root
        root._signalled = signum
        root.stop()
        if root._active:
            root._pending = signum
            return True
        return False

    def exit_now(self, signum: int) -> None:
        """For the signal handler's second signal ("exit at once"): every tracked group is SIGKILLed, then the process
        exits 128 + signum. While a process is being started (its group not known yet), deferred to the end of that
        hold, which comes right after it is tracked."""
        root = self._root
        if root._active:
            root._exiting = signum
            return
        root.kill_processes()
        os._exit(128 + signum)

    def kill_processes(self) -> None:
        for pgid in list(self._groups):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, signal.SIGKILL)

    def _track(self, pgid: int) -> None:
        node: RunCancel | None = self
        while node is not None:
            node._groups.add(pgid)
            node = node._parent

    def _leave(self) -> None:
        with self._lock:
            self._active -= 1
            last = not self._active
            exiting = self._exiting if last else None
            signum, self._pending = (self._pending, None) if last else (None, self._pending)
        if exiting is not None:
            self.exit_now(exiting)
        if signum is not None:
            raise Interrupted(signum)


class _Flag:
    """threading.Event on a reentrant lock. The signal handler runs on the main thread between any two bytecodes and
    stops the run's whole tree: on Event's plain lock it would deadlock if the main thread was inside `set` of one of
    those events already (a group stopping its calls)."""

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.RLock())
        self._flag = False

    def is_set(self) -> bool:
        return self._flag

    def set(self) -> None:
        with self._cond:
            self._flag = True
            self._cond.notify_all()

    def wait(self, timeout: float | None = None) -> bool:
        with self._cond:
            if not self._flag:
                self._cond.wait(timeout)
            return self._flag


def _earlier(a: float | None, b: float | None) -> float | None:
    return b if a is None else a if b is None else min(a, b)


class _ExitWaiter:
    """Waits up to a timeout for the process to exit. Popen.wait(timeout) polls with a doubling sleep, so an exit is
    seen up to half the time elapsed late (a 10 ms sandboxed command was seen at ~15 ms); a pidfd wakes at the exit
    itself. Its fd is close-on-exec and closed on the way out."""

    def __init__(self, proc: subprocess.Popen[Any]) -> None:
        self.proc = proc
        try:
            self.pidfd: int | None = os.pidfd_open(proc.pid)
        except (OSError, AttributeError):  # an older kernel or another system: poll as before
            self.pidfd = None

    def __enter__(self) -> _ExitWaiter:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.pidfd is not None:
            os.close(self.pidfd)
            self.pidfd = None

    def wait(self, timeout: float) -> None:
        if self.pidfd is None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=timeout)
        else:
            select.select([self.pidfd], [], [], timeout)
