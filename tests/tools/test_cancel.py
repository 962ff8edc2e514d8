"""The run's Cancel (runner/engine/cancel.py; its contract runner/tools/base.py Cancel): one stop and one wall-clock
deadline, the same on every thread, with no SIGALRM or interval timer; and the hold around a process's start.

An interrupt that lands while the bash tool starts its process (between the fork and the try/finally that kills the
group) is held and raised inside that try: the process never outlives the run. Before the hold, a loaded machine
could deschedule the runner right there, and `sleep 300` survived a SIGTERM'd run. (Through the CLI:
tests/cli/test_tool_deadlines.py, tests/cli/test_parallel_grep_signals.py.)"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from runner.core.outcome import Interrupted
from runner.engine.cancel import RunCancel
from runner.engine.recorder import _Signals
from runner.tools import bash as bash_module
from runner.tools.base import STOPPING, TIME_UP, Cancelled, ToolContext
from runner.tools.bash import Bash
from runner.tools.grep import Grep
from tests.fakes.procs import wait_gone
from tests.fakes.wait import returns


def test_a_held_signal_is_raised_when_the_last_holder_leaves():
    cancel = RunCancel()
    assert cancel.interrupt(signal.SIGTERM) is False  # nobody starting a process: the handler raises itself
    cancel = RunCancel()
    outer, inner = cancel.held(), cancel.child().held()  # a child's hold is the run's
    outer.__enter__()
    inner.__enter__()
    assert cancel.interrupt(signal.SIGTERM) is True
    inner.__exit__(None, None, None)  # still one holder
    with pytest.raises(Interrupted):
        outer.__exit__(None, None, None)
    assert cancel._pending is None and cancel._active == 0
    assert cancel.stopping() and cancel.signalled == signal.SIGTERM


def test_a_signal_right_after_the_fork_still_kills_the_process(tmp_path: Path, monkeypatch):
    started: list[int] = []
    real_popen = subprocess.Popen

    def popen_then_signal(*args, **kwargs):
        proc = real_popen(*args, **kwargs)
        started.append(proc.pid)
        os.kill(os.getpid(), signal.SIGTERM)  # the worst moment: the process exists, the try is not entered
        return proc

    monkeypatch.setattr(bash_module.subprocess, "Popen", popen_then_signal)
    cancel = RunCancel()
    ctx = ToolContext(workspace=tmp_path, cancel=cancel)
    signals = _Signals(cancel)
    signals.install()
    try:
        with pytest.raises(Interrupted):
            Bash().run({"command": "sleep 300"}, ctx)
    finally:
        signals.restore()
    assert started and wait_gone(started[0]), "the command outlived the interrupted call"
    assert cancel.stopping() and cancel._active == 0 and not cancel._groups


def test_a_backtracking_grep_on_a_worker_thread_stops_at_the_wall_clock(tmp_path: Path):
    # No signal handler runs on a worker, and the regex module's timeout counts CPU seconds: the grep asks the
    # Cancel's monotonic deadline between slices of matching. Nothing is armed: no SIGALRM, no interval timer.
    (tmp_path / "bad.txt").write_text("a" * 60 + "b\n", encoding="utf-8")  # backtracks for hours
    before = signal.getsignal(signal.SIGALRM)
    ctx = ToolContext(workspace=tmp_path, cancel=RunCancel(deadline=time.monotonic() + 0.3))
    box: dict = {}
    worker = threading.Thread(target=lambda: box.update(out=Grep().run({"pattern": "(a|aa)+$"}, ctx)))
    worker.start()
    returns(lambda: worker.join(), "the grep to stop at its deadline")
    assert box["out"].details["stopped"] == TIME_UP
    assert signal.getsignal(signal.SIGALRM) is before
    assert signal.getitimer(signal.ITIMER_REAL)[0] == 0


def test_a_passed_deadline_stops_at_once_and_none_is_no_limit():
    with pytest.raises(Cancelled) as raised:
        RunCancel(deadline=time.monotonic() - 1).check()
    assert raised.value.why == TIME_UP and raised.value.type == "Timeout"
    unbounded = RunCancel()
    unbounded.check()
    assert unbounded.remaining() is None and unbounded.why() is None and unbounded.deadline is None
    assert RunCancel(deadline=time.monotonic() - 1).remaining() == 0.0


def test_a_child_keeps_the_earlier_deadline_and_stops_with_its_parent():
    soon = time.monotonic() + 60
    parent = RunCancel(deadline=soon)
    assert parent.child(soon + 3600).deadline == soon  # never later than its parent's
    assert parent.child(soon - 30).deadline == soon - 30
    child = parent.child()
    grandchild = child.child()
    child.stop()  # alone: the parent goes on
    assert grandchild.why() == STOPPING and not parent.stopping()
    other = parent.child()
    woke: list[bool] = []
    sleeper = threading.Thread(target=lambda: woke.append(other.sleep(3600)))
    sleeper.start()
    parent.stop()  # reaches every child, and wakes its wait
    returns(lambda: sleeper.join(), "the child's sleep to end at its parent's stop")
    assert woke == [True] and parent.child().stopping()  # made after the stop: stopped already


def test_a_wait_for_a_process_ends_at_the_stop_and_at_the_deadline(tmp_path: Path):
    proc = subprocess.Popen(["sleep", "300"])
    try:
        late = RunCancel(deadline=time.monotonic() + 0.1)
        assert returns(lambda: late.wait(proc), "the wait to end at the deadline") is False
        stopped = RunCancel()
        threading.Timer(0.1, stopped.stop).start()
        assert returns(lambda: stopped.wait(proc), "the wait to end at the stop") is False
        proc.kill()
        assert returns(lambda: RunCancel().wait(proc), "the wait to see the exit") is True
    finally:
        proc.kill()
        proc.wait()


def test_list_stops_at_the_deadline(tmp_path: Path):
    """A directory of any size: `list` asks the run's Cancel while it reads the entries (issue 42, item 10)."""
    from runner.tools.list import List

    big = tmp_path / "big"
    big.mkdir()
    for i in range(3000):
        (big / f"f{i}").touch()
    ctx = ToolContext(workspace=tmp_path, cancel=RunCancel(deadline=time.monotonic() - 1))
    with pytest.raises(Cancelled) as raised:
        List().run({"path": "big"}, ctx)
    assert raised.value.why == TIME_UP
    assert List().run({"path": "big"}, ToolContext(workspace=tmp_path, cancel=RunCancel())).details["entries"] == 3000
