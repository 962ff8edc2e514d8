"""runner/tools/deadline.py: `until` stops a step that never returns to Python by itself, and leaves the process's
SIGALRM as it found it. (Through the CLI: tests/cli/test_tool_deadlines.py.)"""

from __future__ import annotations

import re
import signal
import threading
import time

import pytest

from runner.tools.deadline import Late, expired, remaining, until

# Backtracks for 2**26 steps: seconds if `until` failed to stop it (a failure, not a hang), far past 50 ms.
SLOW = ("(a+)+$", "a" * 26 + "b")


def test_a_backtracking_regex_is_stopped_and_the_alarm_put_back():
    before = signal.getsignal(signal.SIGALRM)
    with pytest.raises(Late), until(time.monotonic() + 0.05):
        re.search(*SLOW)
    assert signal.getsignal(signal.SIGALRM) is before
    assert signal.getitimer(signal.ITIMER_REAL)[0] == 0


def test_a_passed_deadline_raises_at_once_and_none_is_no_limit():
    with pytest.raises(Late), until(time.monotonic() - 1):
        raise AssertionError("the block must not run")
    with until(None):
        pass
    assert remaining(None) is None and not expired(None)
    assert remaining(time.monotonic() - 1) == 0.0 and expired(time.monotonic() - 1)


def test_an_inner_block_gives_the_outer_its_timer_back():
    with pytest.raises(Late), until(time.monotonic() + 0.2):
        with until(time.monotonic() + 3600):
            pass
        assert signal.getitimer(signal.ITIMER_REAL)[0] > 0  # the outer deadline is armed again
        re.search(*SLOW)


def test_off_the_main_thread_it_leaves_signals_alone():
    seen: list[object] = []

    def work() -> None:
        with until(time.monotonic() + 3600):
            seen.append(signal.getitimer(signal.ITIMER_REAL)[0])

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    assert seen == [0]
