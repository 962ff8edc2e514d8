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
from pathlib import Path
from typing import Any

import click

from runner.batch.isolation import Refusal, decide_isolation
from runner.batch.result import entry, worst
from runner.batch.shard import SHARD_ENV, ShardError, cut, resolve, tasks_sha256
from runner.batch.tasks import run_all
from runner.cli.batch_output import format_of, refuse, report
from runner.cli.output import secrets_to_mask
from runner.record.rundir import runs_dir_for
from runner.report.github import mask


@click.command("batch")
@click.argument("tasks", nargs=-1, required=True, metavar="TASK...")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=1, show_default=True,
              help="Tasks run at once. Above 1, each task runs in its own git worktree.")
@click.option("--junit", metavar="PATH", help="One JUnit XML file with one testcase per task.")
@click.option("--batch-json", metavar="PATH",
              help="Where to write the batch's result (every task's run dir, status, exit code). "
                   "[default: RUNS_DIR/batch.json]")
@click.option("--shard", metavar="I/N|auto", envvar=SHARD_ENV,
              help="Run only shard I of N (1-based): task k of the task paths sorted by code point runs in shard "
                   "k mod N + 1. auto: CI_NODE_INDEX/CI_NODE_TOTAL (GitLab parallel:), else AGENT_RUN_SHARD. "
                   "[env: AGENT_RUN_SHARD] Merge the shards' outputs with `agent-run batch-merge`.")
@click.option("--output-format", type=click.Choice(["text", "json"]),
              help="stdout: a table, or the batch.json object. [default: text]")
@click.option("--policy", metavar="PATH|NAME")
@click.option("--workspace", metavar="DIR")
@click.option("--runs-dir", metavar="DIR", help="As `run --runs-dir`. [default: WORKSPACE/.agent-run/runs]")
@click.option("--model", metavar="NAME")
@click.option("--max-turns", type=click.IntRange(min=1))
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), metavar="SECONDS")
@click.option("--max-tokens", type=click.IntRange(min=1), help="As `run --max-tokens` (each task's own budget).")
@click.option("--max-cost-usd", type=click.FloatRange(min=0, min_open=True), metavar="USD")
@click.option("--approve", "approvals", multiple=True, metavar="DOMAIN:PATTERN",
              help="As `run --approve`, for every task (repeatable).")
@click.option("--mode", type=click.Choice(["agent", "full_access"]), help="As `run --mode`.")
@click.option("--sandbox", type=click.Choice(["required", "auto", "off"]), help="As `run --sandbox`.")
@click.option("--env-file", "env_files", multiple=True, metavar="PATH", help="As `run --env-file` (repeatable).")
@click.option("--mcp-config", "mcp_configs", multiple=True, metavar="FILE",
              help="As `run --mcp-config`, for every task (repeatable).")
@click.option("--tools", metavar="LIST", help="As `run --tools`, for every task.")
@click.option("--isolate", type=click.Choice(["worktree"]),
              help="Each task in its own worktree even with -j 1 (with -j above 1 this is the default).")
@click.option("--shared-workspace", is_flag=True,
              help="Run parallel tasks in the workspace itself, sharing it (each sees the others' changes); "
                   "needed for -j above 1 outside git.")
def batch(tasks: tuple[str, ...], jobs: int, junit: str | None, batch_json: str | None, shard: str | None,
          output_format: str | None,
          policy: str | None, workspace: str | None, runs_dir: str | None, model: str | None,
          max_turns: int | None, timeout: float | None, max_tokens: int | None, max_cost_usd: float | None,
          approvals: tuple[str, ...], mode: str | None, sandbox: str | None, env_files: tuple[str, ...],
          mcp_configs: tuple[str, ...], tools: str | None, isolate: str | None, shared_workspace: bool) -> None:
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
    fmt = format_of(output_format)
    on_github = os.environ.get("GITHUB_ACTIONS") == "true"
    if on_github:  # before anything is printed: the runner hides these values in the whole log from here on
        for line in mask(secrets_to_mask()):
            click.echo(line, err=True)
    home = Path(workspace or os.getcwd()).expanduser().resolve()
    isolation = decide_isolation(home, jobs, isolate, shared_workspace)
    if isinstance(isolation, Refusal):
        refuse(str(isolation), fmt, on_github)
        return
    cut_of: dict[str, Any] | None = None
    if shard is not None:
        try:
            which = resolve(shard, os.environ)
        except ShardError as exc:
            refuse(str(exc), fmt, on_github)
            return
        cut_of = {"index": which.index, "total": which.total, "tasks_sha256": tasks_sha256(tasks)}
        tasks = tuple(cut(tasks, which))

    common: list[str] = []
    for flag, value in (("--policy", policy), ("--workspace", workspace), ("--runs-dir", runs_dir),
                        ("--model", model), ("--max-turns", max_turns), ("--timeout", timeout),
                        ("--max-tokens", max_tokens), ("--max-cost-usd", max_cost_usd), ("--mode", mode),
                        ("--sandbox", sandbox), ("--tools", tools)):
        if value is not None:
            common += [flag, str(value)]
    for approval in approvals:
        common += ["--approve", approval]
    for env_file in env_files:
        common += ["--env-file", env_file]
    for config in mcp_configs:
        common += ["--mcp-config", config]
    if isolation == "worktree":
        common += ["--isolate", "worktree"]
    elif isolation == "shared":
        common += ["--shared-workspace"]

    summaries = run_all(tasks, jobs, common)
    entries = [entry(t, s) for t, s in zip(tasks, summaries, strict=True)]
    result: dict[str, Any] = {"exit_code": worst(int(s.get("exit_code") or 0) for s in summaries), "jobs": jobs,
              "isolation": isolation, "workspace": str(home), "tasks": entries,
              **({"shard": cut_of} if cut_of is not None else {})}
    out = Path(batch_json).expanduser() if batch_json else runs_dir_for(runs_dir, home) / "batch.json"
    report(result, tasks, summaries, out=out, fmt=fmt, on_github=on_github, junit=junit)
    sys.exit(result["exit_code"])
