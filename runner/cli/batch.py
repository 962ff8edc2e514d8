"""`agent-run batch`: several tasks, each in its own run directory, optionally in parallel (docs/batch.md).

The click command over runner/batch/: each task runs as its own `agent-run run` process, a signal to the batch
passed on to every running one (`tasks.py`); parallel tasks must not share a working tree, so with `-j N > 1`
each gets a worktree of its own unless `--shared-workspace` says the sharing is wanted (`isolation.py`); with
`--shard I/N` the batch runs only its slice of the task list (`shard.py`), for a CI matrix, and `batch-merge`
makes the shards' outputs one result. Both commands write and print through cli/batch_output.py: batch.json,
the table, JUnit, and on GitHub Actions every task's annotations titled with the task (a task's own die with
its captured stderr), one output `results` (its tasks get no GITHUB_OUTPUT: each would overwrite the last
one's) and an overview table after the tasks' own step summary sections.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from runner.batch.isolation import Refusal, decide_isolation
from runner.batch.result import entry, worst
from runner.batch.shard import SHARD_ENV, ShardError, batch_id, cut, resolve, tasks_sha256
from runner.batch.tasks import run_all
from runner.cli.batch_output import format_of, refuse, report
from runner.cli.flags import forwarded, named, options, or_env
from runner.cli.output import secrets_to_mask
from runner.record.rundir import runs_dir_for
from runner.report.github import mask
from runner.run.option_table import OPTIONS, Option, row


def make_batch(table: Sequence[Option] = OPTIONS) -> click.Command:
    """`batch` with the options of `table` it passes on to each task (a test gives its own)."""

    @click.command("batch")
    @click.argument("tasks", nargs=-1, required=True, metavar="TASK...")
    @click.option("-j", "--jobs", type=click.IntRange(min=1), default=1, show_default=True,
                  help="Tasks run at once. Above 1, each task runs in its own git worktree.")
    @click.option("--junit", metavar="PATH", help="One JUnit XML file with one testcase per task.")
    @click.option("--batch-json", metavar="PATH",
                  help="Where to write the batch's result (every task's run dir, status, exit code). "
                       "[default: RUNS_DIR/batch.json]")
    @click.option("--shard", metavar="I/N|auto", envvar=SHARD_ENV,
                  help="Run only shard I of N (1-based): task k of the task paths sorted by code point runs in "
                       "shard k mod N + 1. auto: CI_NODE_INDEX/CI_NODE_TOTAL (GitLab parallel:), else "
                       "AGENT_RUN_SHARD. [env: AGENT_RUN_SHARD] Merge the shards' outputs with `agent-run "
                       "batch-merge`.")
    @click.option("--output-format", type=click.Choice(["text", "json"]),
                  help="stdout: a table, or the batch.json object. [default: text]")
    @options((o for o in table if o.batch), "batch")
    @named("batch", "--isolate", "--shared-workspace")  # not passed on as given: they decide the isolation
    def batch(tasks: tuple[str, ...], jobs: int, junit: str | None, batch_json: str | None, shard: str | None,
              output_format: str | None, isolate: str | None, shared_workspace: bool, **kw: Any) -> None:
        """Run TASK... (each in its own run directory), print a table, exit with the worst code.

        \b
        -j 1 runs the tasks one after another in the workspace itself. -j N above 1
        runs each task in its own worktree under WORKSPACE/.agent-run/worktrees/, so
        each run's changes.patch is its own; that needs a git workspace with a
        commit, else the batch is refused (exit 2) unless --shared-workspace.
        The result is also written to --batch-json as JSON:
        {exit_code, tasks: [{task, run_dir, status, exit_code, duration_s, worktree, ...}]}.
        See docs/batch.md.
        """
        given = Given(tasks, jobs, junit, batch_json, shard, output_format, isolate, shared_workspace,
                      kw["workspace"], kw["runs_dir"], or_env(row("--land", table), kw["land"]))
        _batch(given, forwarded(kw, table))

    return batch


@dataclass(frozen=True)
class Given:
    """What batch reads of its options itself (the others it passes on)."""

    tasks: tuple[str, ...]
    jobs: int
    junit: str | None
    batch_json: str | None
    shard: str | None
    output_format: str | None
    isolate: str | None
    shared_workspace: bool
    workspace: str | None
    runs_dir: str | None
    land: str | None = None


def _batch(given: Given, common: list[str]) -> None:
    """The tasks run, each `agent-run run` given `common` (and its isolation); the result reported."""
    tasks, jobs, shard, runs_dir = given.tasks, given.jobs, given.shard, given.runs_dir
    fmt = format_of(given.output_format)
    on_github = os.environ.get("GITHUB_ACTIONS") == "true"
    if on_github:  # before anything is printed: the runner hides these values in the whole log from here on
        for line in mask(secrets_to_mask()):
            click.echo(line, err=True)
    home = Path(given.workspace or os.getcwd()).expanduser().resolve()
    isolation = decide_isolation(home, jobs, given.isolate, given.shared_workspace)
    if isinstance(isolation, Refusal):
        refuse(str(isolation), fmt, on_github)
        return
    if (refusal := land_refusal(given.land, isolation)) is not None:
        refuse(refusal, fmt, on_github)
        return
    out = Path(given.batch_json).expanduser() if given.batch_json else runs_dir_for(runs_dir, home) / "batch.json"
    cut_of: dict[str, Any] | None = None
    if shard is not None:
        try:
            which = resolve(shard, os.environ)
        except ShardError as exc:
            refuse(str(exc), fmt, on_github)
            return
        cut_of = {"index": which.index, "total": which.total, "tasks_sha256": tasks_sha256(tasks),
                  "batch_id": batch_id(os.environ)}
        tasks = tuple(cut(tasks, which))
        # A shard killed before it writes its own must not leave an earlier batch's report for the merge to take.
        try:
            out.unlink(missing_ok=True)
        except OSError as exc:
            refuse(f"cannot remove the earlier {out}: {exc.strerror or exc}; a shard's report must be its own",
                   fmt, on_github)
            return

    if isolation == "worktree":
        common += ["--isolate", "worktree"]
    elif isolation == "shared":
        common += ["--shared-workspace"]

    summaries = run_all(tasks, jobs, common)
    entries = [entry(t, s) for t, s in zip(tasks, summaries, strict=True)]
    result: dict[str, Any] = {"exit_code": worst(int(s.get("exit_code") or 0) for s in summaries), "jobs": jobs,
              "isolation": isolation, "workspace": str(home), "tasks": entries,
              **({"shard": cut_of} if cut_of is not None else {})}
    report(result, tasks, summaries, out=out, fmt=fmt, on_github=on_github, junit=given.junit)
    sys.exit(result["exit_code"])


def land_refusal(land: str | None, isolation: str) -> str | None:
    """Why batch cannot land as asked, or None: each task lands on its own branch (`agent-run/<task>`), from its
    own worktree; a commit in a task's worktree would land nowhere anyone keeps."""
    if land == "commit":
        return ("batch --land commit: each task's commit would stay in its own worktree; use --land branch or pr "
                "(each task on its own branch), or `run --land commit` for one task")
    if land in ("branch", "pr") and isolation != "worktree":
        return (f"batch --land {land} lands each task on its own branch, which needs each task in its own worktree "
                "(-j above 1, or --isolate worktree)")
    return None


batch = make_batch()
