"""How a run ends. The one place that maps outcomes to process exit codes.

Control flow that ends a run is an exception carrying its status (the
mini-swe-agent pattern): the loop raises, the CLI catches once, writes the
summary and exits with the mapped code.
"""

from __future__ import annotations

import signal
from enum import StrEnum
from typing import Any


class Status(StrEnum):
    SUCCESS = "success"
    FAILED = "failed"
    USAGE_ERROR = "usage_error"
    DENIED = "denied"
    DOOM_LOOP = "doom_loop"
    BUDGET_EXHAUSTED = "budget_exhausted"
    MODEL_ERROR = "model_error"
    INTERRUPTED = "interrupted"
    LAND_FAILED = "land_failed"  # the run succeeded, its change could not be landed (`--land`): run_status keeps it


EXIT_CODES: dict[Status, int] = {
    Status.SUCCESS: 0,
    Status.FAILED: 1,
    Status.USAGE_ERROR: 2,
    Status.DENIED: 3,
    Status.DOOM_LOOP: 4,
    Status.BUDGET_EXHAUSTED: 5,
    Status.MODEL_ERROR: 6,
    Status.LAND_FAILED: 1,
}


# The signals that interrupt a run (and that `batch` passes on to its tasks): Ctrl-C, a CI cancel or a
# supervisor's stop, and a closed terminal or a dropped ssh session. Each ends the run recorded, exit 128 + N.
INTERRUPT_SIGNALS: tuple[signal.Signals, ...] = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def exit_code(status: Status, signum: int | None = None) -> int:
    if status is Status.INTERRUPTED:
        return 128 + (signum or signal.SIGINT)
    return EXIT_CODES[status]


class RunEnded(Exception):
    """Ends the run early. `reason` is one line a human can act on."""

    status: Status = Status.FAILED

    def __init__(self, reason: str, **details: Any) -> None:
        super().__init__(reason)
        self.reason = reason
        self.details = details  # extra keys for summary.json (which loop, which budget, the figures)


class DoomLoop(RunEnded):
    status = Status.DOOM_LOOP


class Denied(RunEnded):
    status = Status.DENIED


class Failed(RunEnded):
    status = Status.FAILED


class UsageError(RunEnded):
    status = Status.USAGE_ERROR


class BudgetExhausted(RunEnded):
    status = Status.BUDGET_EXHAUSTED


class ModelError(RunEnded):
    status = Status.MODEL_ERROR


class Stopped(RunEnded):
    """A child agent told to stop because the agent or run that called it is ending (a signal, a guard's stop, the
    clock); never a run's own ending: that is whatever ended its caller."""


class Interrupted(BaseException):
    """Raised from the signal handler. A BaseException, like KeyboardInterrupt, so
    that no `except Exception` on the way (the HTTP client has some) swallows it."""

    status = Status.INTERRUPTED

    def __init__(self, signum: int) -> None:
        self.reason = f"interrupted by {signal.Signals(signum).name}"
        super().__init__(self.reason)
        self.signum = signum
