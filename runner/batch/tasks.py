"""A batch's tasks run: each as its own `agent-run run` process (one task's crash or signal handling cannot
take the others down), up to `jobs` at once. A signal to the batch is passed on to every running task, which
each finish their run directory as usual; tasks not started yet are not started (docs/batch.md). A batch that
dies without passing anything on (SIGKILL, the OOM killer) takes its tasks with it: each is started with
PR_SET_PDEATHSIG(SIGTERM), so it records its interrupt and ends instead of running on unwatched."""

from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from runner.core.outcome import EXIT_CODES, INTERRUPT_SIGNALS, Status
from runner.record.announce import RUN_DIR_FILE_ENV, read_announced

USAGE_ERROR = EXIT_CODES[Status.USAGE_ERROR]


def run_all(tasks: tuple[str, ...], jobs: int, common: list[str]) -> list[dict[str, Any]]:
    """Every task's summary (what its `run --output-format json` printed), in the order of `tasks`."""
    children: set[subprocess.Popen[str]] = set()
    lock = threading.Lock()
    stopped: list[int] = []  # the signal that stopped the batch: tasks still queued are not started

    def forward(signum: int, _frame: Any) -> None:
        with lock:
            stopped.append(signum)
            for child in children:
                if child.poll() is None:
                    child.send_signal(signum)

    die_with_us = _die_with(os.getpid())
    # The step's outputs are the batch's (`results`): a task writing its own would replace the previous
    # task's, and the step would end with whichever finished last.
    child_env = {k: v for k, v in os.environ.items() if k != "GITHUB_OUTPUT"}

    def run_one(task: str, announced: Path) -> dict[str, Any]:
        argv = [*_self_argv(), "run", "--output-format", "json", "-q", *common, task]
        started = time.monotonic()
        with lock:
            if stopped:
                return {"status": "not_started", "exit_code": 128 + stopped[0],
                        "reason": f"the batch was stopped by {signal.Signals(stopped[0]).name} first"}
            child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     stdin=subprocess.DEVNULL, env={**child_env, RUN_DIR_FILE_ENV: str(announced)},
                                     preexec_fn=die_with_us)
            children.add(child)
        out, err = child.communicate()
        with lock:
            children.discard(child)
        # A child killed by a signal has a negative returncode; as a shell would, 128 + the signal.
        code = child.returncode if child.returncode >= 0 else 128 - child.returncode
        try:
            summary = json.loads(out)
        except json.JSONDecodeError:
            said = (err.strip().splitlines() or ["no summary"])[-1]
            if child.returncode < 0:  # killed (SIGKILL, the OOM killer): its run dir, if any, is named below
                said = f"killed by {_signal_name(-child.returncode)} before it printed a summary"
            summary = {"status": "usage_error" if code == USAGE_ERROR else "failed", "exit_code": code,
                       "reason": said}
        if not isinstance(summary, dict):
            summary = {"status": "failed", "exit_code": code, "reason": "the run printed no summary object"}
        summary.setdefault("exit_code", code)
        if code != 0 and summary["exit_code"] != code:  # it printed its summary, then failed or was killed
            summary.update(status="failed" if summary.get("status") == "success" else summary.get("status"),
                           exit_code=code, reason=f"exited {code} after printing a summary with exit code "
                                                  f"{summary['exit_code']}")
        summary.setdefault("duration_s", round(time.monotonic() - started, 3))
        _add_announced(summary, announced)
        return summary

    old = {s: signal.signal(s, forward) for s in INTERRUPT_SIGNALS}
    try:
        with tempfile.TemporaryDirectory(prefix="agent-run-batch-") as tmp:
            announced = [Path(tmp, f"task-{i}.run_dir") for i in range(len(tasks))]
            with ThreadPoolExecutor(max_workers=jobs) as pool:
                return list(pool.map(run_one, tasks, announced))
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)


_PR_SET_PDEATHSIG = 1


def _die_with(parent: int) -> Callable[[], None] | None:
    """A child's preexec: SIGTERM to it when the batch dies, however (Linux; elsewhere None, nothing). The signal
    comes when the thread that started the child ends: a pool thread, which waits for its child to its end."""
    if not sys.platform.startswith("linux"):
        return None
    prctl = ctypes.CDLL(None, use_errno=True).prctl  # looked up before the fork: the child only calls it

    def preexec() -> None:
        prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM))
        if os.getppid() != parent:  # the batch died between the fork and prctl: no signal will ever come
            os._exit(128 + signal.SIGTERM)

    return preexec


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:  # a real-time signal has no name of its own
        return f"signal {signum}"


def _add_announced(summary: dict[str, Any], announced: Path) -> None:
    """A task that printed no summary (killed: SIGKILL, the OOM killer) may still have a run directory, which
    it named in `announced` when it made it (runner/record/announce.py): batch.json names it, so it can be
    resumed."""
    if summary.get("run_dir"):
        return
    run_dir = read_announced(announced)
    if run_dir is not None:
        summary.update(run_dir=run_dir, run_id=Path(run_dir).name)


def _self_argv() -> list[str]:
    exe = Path(sys.executable).parent / "agent-run"
    if exe.exists() and os.access(exe, os.X_OK):
        return [str(exe)]
    return [sys.executable, "-m", "runner"]
