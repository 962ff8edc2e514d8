"""Waiting in tests: poll for a condition, never sleep a fixed time and hope.

A test that waits names what it waits for; the time limit only stops a hang, so it is generous
(a loaded 2-core machine runs everything several times slower than an idle one)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

HANG_S = 60.0  # long enough for anything a test waits on to happen on a busy machine


def until(condition: Callable[[], T], what: str, timeout_s: float = HANG_S, interval_s: float = 0.02) -> T:
    """Poll `condition` until it returns something truthy, and return that; fail naming `what`
    if it has not after `timeout_s`."""
    end = time.monotonic() + timeout_s
    while True:
        got = condition()
        if got:
            return got
        if time.monotonic() > end:
            raise AssertionError(f"still waiting after {timeout_s:g} s for {what}")
        time.sleep(interval_s)


def returns(call: Callable[[], T], what: str, timeout_s: float = HANG_S) -> T:
    """`call()`'s result (or its exception), failing naming `what` if it has not returned after `timeout_s`:
    for a call that must not wait on something that lasts longer still (a `sleep 300` it should have killed).
    The call runs on a daemon thread, left behind if it hangs."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = call()
        except BaseException as e:  # re-raised in the caller's thread
            box["error"] = e

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout_s)
    if thread.is_alive():
        raise AssertionError(f"still waiting after {timeout_s:g} s for {what}")
    if "error" in box:
        raise box["error"]
    return box["value"]
