"""`agent-run run`: run TASK headless and exit with a code a pipeline can act on."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import click

from runner.cli.flags import F, options, or_env, output_format
from runner.cli.output import finish, with_github
from runner.run.assemble import execute
from runner.run.option_table import CONTINUED, OPTIONS, Goes, Option
from runner.run.options import RunOptions
from runner.sessions.auto_resume import run_chain


def run_options(command: str) -> Callable[[F], F]:
    """The options of `run` that `command` takes too (resume, fork, github respond: a continued or an
    answering run takes the same settings); resume and fork hide those they refuse."""
    return options((o for o in OPTIONS if o.shared), command, hide=lambda o: command in CONTINUED and not o.continued)


def options_from(task: str, kw: dict[str, Any], table: Sequence[Option] = OPTIONS,
                 **more: Any) -> tuple[RunOptions, str]:
    """RunOptions from the table's options as click gave them (`more`: a command's own values, which win),
    and the output format in effect."""
    given = kw | more
    fmt = output_format(given["output_format"])
    settings: dict[str, Any] = {}
    run: dict[str, Any] = {}
    for option in table:
        if option.name not in given or option.goes is Goes.COMMAND:
            continue
        value = given[option.name]
        if option.goes is Goes.SETTINGS:
            value = (list(value) or None) if option.many else value
            if option.value.kind == "switch" and not value:
                value = None  # a switch not given: the environment and the layers below decide
            if value is not None:
                settings[option.name] = value
            continue
        value = or_env(option, value)
        run[option.name] = list(value) if option.many else value
    opts = RunOptions(task=task, cli_settings=settings, verbosity=0 if kw["quiet"] else (2 if kw["verbose"] else 1),
                      stream_events=fmt == "stream-json", **run)
    return opts, fmt


def make_run(table: Sequence[Option] = OPTIONS) -> click.Command:
    """`run` with the options of `table` (a test gives its own)."""

    @click.command("run")
    @click.argument("task", metavar="TASK")
    @options((o for o in table if o.run), "run")
    def run(task: str, **kw: Any) -> None:
        """Run TASK (a Markdown file, or - for stdin) headless.

        \b
        Exit codes: 0 success, 1 failed, 2 usage/config error, 3 denied,
        4 doom_loop, 5 budget_exhausted, 6 model_error,
        130/143/129 interrupted (SIGINT/SIGTERM/SIGHUP).
        """
        opts, fmt = options_from(task, kw, table)
        outcome, reporter = with_github(lambda: run_chain(opts, lambda: execute(opts)))
        finish(outcome, reporter, fmt=fmt, quiet=kw["quiet"], junit=kw["junit"], task_file=task)

    return run


run = make_run()
