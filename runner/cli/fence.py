"""The one way a command prints what a run recorded — the model's text, tool output, a task's title, a call's
command — so that none of it issues a workflow command: on GitHub Actions everything printed inside `fenced()`
(stdout and stderr) sits between `::stop-commands::TOKEN` and `::TOKEN::` (runner/report/github.py
`stop_commands`, as the run's own progress and answer are fenced by `GitHubReporter`), so a recorded
`::add-mask::` or `::warning::` line is only text in the job's log.

Every reader of a run directory prints through it: `runs list`, `runs show` (text, `--json`, `--transcript`,
`--audit`), `replay`'s listing, `policy simulate` and `policy suggest`. The fence lines go to stderr, as the
run's do, so stdout stays the command's output (`runs show --json` is JSON on GitHub too). The token is a fresh
uuid4 drawn when the command prints: text recorded before it cannot name it, even when streamed unseen.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

import click

from runner.report.github import on_github, stop_commands

P = ParamSpec("P")
R = TypeVar("R")


@contextmanager
def fenced(environ: Mapping[str, str] | None = None) -> Iterator[None]:
    """What is printed inside issues no workflow command when `environ` (os.environ) is a GitHub Actions job's;
    elsewhere nothing is added. The end token is printed however the block ends (an exit code, an error)."""
    if not on_github(os.environ if environ is None else environ):
        yield
        return
    before, after = stop_commands()
    sys.stdout.flush()  # whatever came before is not inside
    click.echo(before, err=True)
    try:
        yield
    finally:
        sys.stdout.flush()  # all of it inside: then command processing resumes
        click.echo(after, err=True)


def prints_recorded_text(command: Callable[P, R]) -> Callable[P, R]:
    """A click command's body printed inside `fenced()`: for a command whose every output may hold recorded text."""

    @functools.wraps(command)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        with fenced():
            return command(*args, **kwargs)

    return wrapper
