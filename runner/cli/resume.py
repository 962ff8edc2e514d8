"""`agent-run resume` and `agent-run fork`: continue a recorded run in a new run directory."""

from __future__ import annotations

from typing import Any

import click

from runner.cli.output import finish, with_github
from runner.cli.run import options_from, run_options
from runner.sessions.resume import ContinueOptions, execute_continue

ALLOW_UNKEYED = ("With AGENT_RUN_AUDIT_KEY set: accept a run directory that is not keyed under that key (its hash "
                 "chain is then only as good as without a key).")


def _tools_sealed(_ctx: click.Context, _param: click.Parameter, value: str | None) -> None:
    if value is not None:
        raise click.UsageError("--tools cannot be given to a resume or fork: the tool list is sealed in the run "
                               "(its tools.json, sent again byte for byte); start a new run with `run --tools`")


# Hidden: resume and fork take no such option, but a clear refusal beats click's "No such option".
TOOLS_SEALED = click.option("--tools", hidden=True, expose_value=False, callback=_tools_sealed)


@click.command("resume")
@click.argument("run_dir", required=False, metavar="[RUN_DIR]")
@click.argument("message", required=False, metavar="[MESSAGE|-]")
@click.option("--last", is_flag=True, help="Resume the newest run in the runs directory (then MESSAGE is the only "
                                           "argument).")
@click.option("--force", is_flag=True, help="Go on even if the workspace is not in the state the run left it in.")
@click.option("--apply-changes", is_flag=True,
              help="First apply the run's changes.patch to the workspace (a fresh checkout of the run's base).")
@click.option("--allow-unkeyed", is_flag=True, help=ALLOW_UNKEYED)
@click.option("--compact", is_flag=True, help="Summarize the conversation before continuing it (a compaction call "
                                              "first, whatever the context's size).")
@TOOLS_SEALED
@run_options("resume")
def resume(run_dir: str | None, message: str | None, last: bool, force: bool, apply_changes: bool,
           allow_unkeyed: bool, compact: bool, **kw: Any) -> None:
    """Continue RUN_DIR's conversation in a new run, with fresh budgets: after a budget, a timeout, a loop
    guard, a model outage, a denial, a kill, or a finished run (a follow-up MESSAGE; - reads it from stdin).

    \b
    The first request extends the run's last one byte for byte (prompt cache), then one message says
    why it stopped, then MESSAGE. Exit codes as `run`; 2 when the run is locked by a live process,
    the workspace differs from the state the run left, or RUN_DIR is not a run.
    """
    if last and run_dir is not None and message is None:
        run_dir, message = None, run_dir  # `resume --last MESSAGE`
    opts, fmt = options_from("-", kw)
    cont = ContinueOptions(opts, run_dir, "resume", last=last, message=message, force=force,
                           apply_changes=apply_changes, allow_unkeyed=allow_unkeyed, compact=compact)
    outcome, reporter = with_github(lambda: execute_continue(cont))
    finish(outcome, reporter, fmt=fmt, quiet=kw["quiet"], junit=kw["junit"])


@click.command("fork")
@click.argument("run_dir", metavar="RUN_DIR")
@click.argument("message", required=False, metavar="[MESSAGE|-]")
@click.option("--at", type=click.IntRange(min=1), metavar="N",
              help="Keep turns 1..N, each complete with its tool results. [default: the whole run]")
@click.option("--force", is_flag=True, help="Go on even if the workspace is not in the state the run left it in.")
@click.option("--apply-changes", is_flag=True,
              help="First apply the run's changes.patch to the workspace (a fresh checkout of the run's base).")
@click.option("--allow-unkeyed", is_flag=True, help=ALLOW_UNKEYED)
@TOOLS_SEALED
@run_options("fork")
def fork(run_dir: str, message: str | None, at: int | None, force: bool, apply_changes: bool, allow_unkeyed: bool,
         **kw: Any) -> None:
    """Start a new run from RUN_DIR's conversation as it was at a turn, leaving RUN_DIR untouched: to try a
    different instruction (MESSAGE) from the same point.

    Files are not rewound: the workspace is the one the run left (checked as for `resume`)."""
    opts, fmt = options_from("-", kw)
    cont = ContinueOptions(opts, run_dir, "fork", message=message, at=at, force=force, apply_changes=apply_changes,
                           allow_unkeyed=allow_unkeyed)
    outcome, reporter = with_github(lambda: execute_continue(cont))
    finish(outcome, reporter, fmt=fmt, quiet=kw["quiet"], junit=kw["junit"])
