"""`agent-run batch`: several tasks, each in its own run directory, optionally in parallel.

Each task runs as its own `agent-run run` process (isolation: one task's crash or
signal handling cannot take the others down). A signal to the batch is passed on
to every running task, which each finish their run directory as usual.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import click

from runner.cli.output import case_of
from runner.report.junit import write_junit


@click.command("batch")
@click.argument("tasks", nargs=-1, required=True, metavar="TASK...")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=1, show_default=True, help="Tasks run at once.")
@click.option("--junit", metavar="PATH", help="One JUnit XML file with one testcase per task.")
@click.option("--policy", metavar="PATH|NAME")
@click.option("--workspace", metavar="DIR")
@click.option("--model", metavar="NAME")
@click.option("--max-turns", type=click.IntRange(min=1))
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), metavar="SECONDS")
@click.option("--max-cost-usd", type=click.FloatRange(min=0, min_open=True), metavar="USD")
@click.option("--sandbox", type=click.Choice(["required", "auto", "off"]), help="As `run --sandbox`.")
@click.option("--env-file", "env_files", multiple=True, metavar="PATH", help="As `run --env-file` (repeatable).")
def batch(tasks: tuple[str, ...], jobs: int, junit: str | None, policy: str | None, workspace: str | None,
          model: str | None, max_turns: int | None, timeout: float | None, max_cost_usd: float | None,
          sandbox: str | None, env_files: tuple[str, ...]) -> None:
    """Run TASK... (each in its own run directory), print a table, exit with the worst code."""
    common: list[str] = []
    for flag, value in (("--policy", policy), ("--workspace", workspace), ("--model", model),
                        ("--max-turns", max_turns), ("--timeout", timeout), ("--max-cost-usd", max_cost_usd),
                        ("--sandbox", sandbox)):
        if value is not None:
            common += [flag, str(value)]
    for env_file in env_files:
        common += ["--env-file", env_file]
    children: set[subprocess.Popen[str]] = set()
    lock = threading.Lock()

    def forward(signum: int, _frame: Any) -> None:
        with lock:
            for child in children:
                if child.poll() is None:
                    child.send_signal(signum)

    old = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}

    def run_one(task: str) -> dict[str, Any]:
        argv = [*_self_argv(), "run", "--output-format", "json", "-q", *common, task]
        child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 stdin=subprocess.DEVNULL)
        with lock:
            children.add(child)
        out, err = child.communicate()
        with lock:
            children.discard(child)
        try:
            summary = json.loads(out)
        except json.JSONDecodeError:
            summary = {"status": "usage_error", "exit_code": child.returncode,
                       "reason": (err.strip().splitlines() or ["no summary"])[-1]}
        summary.setdefault("exit_code", child.returncode)
        return summary

    try:
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            summaries = list(pool.map(run_one, tasks))
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)

    rows = [(t, s.get("status", "?"), str(s.get("exit_code")), str(s.get("turns", "")),
             f"{s.get('duration_s', 0) or 0:.1f}s", s.get("run_dir") or s.get("reason") or "")
            for t, s in zip(tasks, summaries, strict=True)]
    header = ("task", "status", "exit", "turns", "time", "run dir")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(5)]
    for row in [header, *rows]:
        click.echo("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:5])) + "  " + row[5])
    if junit:
        write_junit(junit, [case_of(s, t) for t, s in zip(tasks, summaries, strict=True)])
    worst = max(int(s.get("exit_code") or 0) for s in summaries)
    sys.exit(worst)


def _self_argv() -> list[str]:
    exe = Path(sys.executable).parent / "agent-run"
    if exe.exists() and os.access(exe, os.X_OK):
        return [str(exe)]
    return [sys.executable, "-m", "runner"]
