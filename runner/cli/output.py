"""What a finished run prints and writes besides its run directory: the result on stdout,
the one-line ending on stderr, the JUnit file, and — on GitHub Actions — masks,
stop-commands, the step summary, outputs and annotations (workflow commands go to
stderr, which the runner reads too, so stdout stays the result)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from runner.recorder import RunOutcome
from runner.report.github import GitHubReporter
from runner.report.junit import JUnitCase, write_junit


def secrets_to_mask() -> list[str | None]:
    return [os.environ.get(k) for k in ("OPENAI_API_KEY", "AGENT_RUN_API_KEY")]


def with_github(run: Callable[[], RunOutcome]) -> tuple[RunOutcome, GitHubReporter]:
    reporter = GitHubReporter(os.environ)
    for line in reporter.start(secrets_to_mask()):
        click.echo(line, err=True)
    return run(), reporter


def finish(outcome: RunOutcome, reporter: GitHubReporter, *, fmt: str, quiet: bool,
           junit: str | None = None, task_file: str | None = None) -> None:
    summary = outcome.summary
    if fmt == "json":
        click.echo(json.dumps(summary, indent=2, sort_keys=True, ensure_ascii=False))
    elif fmt == "text" and summary.get("answer"):
        click.echo(summary["answer"])
    sys.stdout.flush()
    for line in reporter.finish(summary, summary.get("loop_warnings") or []):
        click.echo(line, err=True)
    if junit:
        write_junit(junit, [case_of(summary, task_file or summary.get("task_file") or "task")])
    if not quiet or outcome.exit_code != 0:
        click.echo(ending_line(outcome), err=True)
    sys.exit(outcome.exit_code)


def case_of(summary: dict[str, Any], task_file: str) -> JUnitCase:
    return JUnitCase(task_file, summary.get("title") or Path(task_file).name, summary)


def ending_line(outcome: RunOutcome) -> str:
    summary = outcome.summary
    where = f" — run dir: {outcome.run_dir}" if outcome.run_dir else ""
    reason = f": {summary['reason']}" if summary.get("reason") else ""
    return f"agent-run: {summary['status']} (exit {outcome.exit_code}){reason}{where}"
