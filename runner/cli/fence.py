"""The one way a command prints what a run recorded — the model's text, tool output, a task's title, a call's
command — so that none of it issues a workflow command: on GitHub Actions everything printed inside `fenced()`
(stdout and stderr) sits between `::stop-commands::TOKEN` and `::TOKEN::` (runner/report/github.py
`stop_commands`, as the run's own progress and answer are fenced by `GitHubReporter`), so a recorded
`::add-mask::` or `::warning::` line is only text in the job's log.

Every reader of a run directory prints through it: `runs list`, `runs show` (text, `--json`, `--transcript`,
`--audit`), `replay`'s listing, `policy simulate` and `policy suggest`. The fence lines go to stdout, the stream
the recorded text is printed on, as the run's own are: GitHub's runner reads stdout and stderr on separate
threads, so a fence on the other stream could be processed after the text it was meant to cover. Two outputs are
not fenced because nothing in them can act: JSON (`--json`; the runner acts on a line that starts with `::` once
leading blanks are trimmed, and no line of JSON does) — which keeps it parseable on GitHub — and a stdout that is
a regular file (the job's log never sees it). The token is a fresh uuid4 drawn when the command prints: text
recorded before it cannot name it, even when streamed unseen.
"""

from __future__ import annotations

import functools
import os
import stat
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

import click

from runner.report.github import on_github, stop_commands

P = ParamSpec("P")
R = TypeVar("R")


@contextmanager
def fenced(environ: Mapping[str, str] | None = None, *, inert: bool = False) -> Iterator[None]:
    """What is printed on stdout inside issues no workflow command when `environ` (os.environ) is a GitHub
    Actions job's and stdout reaches its log; elsewhere, or for `inert` output (JSON), nothing is added. The end
    token is printed however the block ends (an exit code, an error)."""
    if inert or not on_github(os.environ if environ is None else environ) or _to_file():
        yield
        return
    before, after = stop_commands()
    sys.stdout.flush()  # whatever came before is not inside
    click.echo(before)
    try:
        yield
    finally:
        click.echo(after)
        sys.stdout.flush()


def _to_file() -> bool:
    """Whether stdout is a regular file (`> out.md`): not the job's log, and fence lines would only corrupt it."""
    try:
        return stat.S_ISREG(os.fstat(sys.stdout.fileno()).st_mode)
    except (OSError, ValueError, AttributeError):  # no real descriptor (a test runner's capture): treat as the log
        return False


def prints_recorded_text(command: Callable[P, R]) -> Callable[P, R]:
    """A click command's body printed inside `fenced()`: for a command whose every output may hold recorded text.
    A command's `as_json` flag (`--json`) makes its output inert."""

    @functools.wraps(command)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        with fenced(inert=bool(kwargs.get("as_json"))):
            return command(*args, **kwargs)

    return wrapper
