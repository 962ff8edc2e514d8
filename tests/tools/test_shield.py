"""An interrupt that lands while the bash tool starts its process (between the fork and the try/finally that
kills the group) is held and raised inside that try: the process never outlives the run. Before the shield, a
loaded machine could deschedule the runner right there, and `sleep 300` survived a SIGTERM'd run."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

from runner.core.outcome import Interrupted
from runner.engine.recorder import _Signals
from runner.tools import bash as bash_module
from runner.tools.base import Shield, ToolContext
from runner.tools.bash import Bash
from tests.fakes.procs import wait_gone


def test_a_held_signal_is_raised_when_the_last_holder_leaves():
    shield = Shield()
    assert shield.hold(signal.SIGTERM) is False  # nobody starting a process: the handler raises itself
    shield.enter()
    shield.enter()
    assert shield.hold(signal.SIGTERM) is True
    shield.leave()  # still one holder
    with pytest.raises(Interrupted):
        shield.leave()
    assert shield.pending is None and shield.active == 0


def test_a_signal_right_after_the_fork_still_kills_the_process(tmp_path: Path, monkeypatch):
    started: list[int] = []
    real_popen = subprocess.Popen

    def popen_then_signal(*args, **kwargs):
        proc = real_popen(*args, **kwargs)
        started.append(proc.pid)
        os.kill(os.getpid(), signal.SIGTERM)  # the worst moment: the process exists, the try is not entered
        return proc

    monkeypatch.setattr(bash_module.subprocess, "Popen", popen_then_signal)
    ctx = ToolContext(workspace=tmp_path)
    signals = _Signals(ctx)
    signals.install()
    try:
        with pytest.raises(Interrupted):
            Bash().run({"command": "sleep 300"}, ctx)
    finally:
        signals.restore()
    assert started and wait_gone(started[0]), "the command outlived the interrupted call"
    assert ctx.abort.is_set() and ctx.shield.active == 0
