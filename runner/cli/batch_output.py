"""What `batch` and `batch-merge` print and write once they hold a batch's result: batch.json, the table
(or the JSON) on stdout, the JUnit file, and on GitHub Actions every task's annotations, the step output
`results` and the step summary's overview table (docs/batch.md)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import click

from runner.batch.result import write_result
from runner.cli.output import case_of
from runner.core.outcome import EXIT_CODES, Status
from runner.core.shown import shown, shown_obj
from runner.record.rundir import write_atomic
from runner.report.batch_summary import markdown, table, task_annotations
from runner.report.github import command, compact_results_json, outputs_block, stop_commands
from runner.report.junit import write_junit
from runner.report.step_summary import SUMMARY_LIMIT

USAGE_ERROR = EXIT_CODES[Status.USAGE_ERROR]  # a refusal is one


def format_of(given: str | None) -> str:
    env_format = os.environ.get("AGENT_RUN_OUTPUT_FORMAT")
    return given or (env_format if env_format in ("text", "json") else "text")


def report(result: Mapping[str, Any], tasks: Sequence[str], summaries: Sequence[dict[str, Any]], *, out: Path,
           fmt: str, on_github: bool, junit: str | Path | None, summary_md: Path | None = None) -> None:
    """Write and print `result`. `tasks`/`summaries` are the rows of the table, the JUnit cases and the
    annotations (a merge adds one for each shard that never reported); `result` is what batch.json holds;
    `summary_md` a file for the step summary's table also off GitHub (a merge's). A task's name is shown as the
    records show it (a name that is not UTF-8 as `\\xNN`: runner/core/shown.py), on stdout and in JUnit too."""
    tasks, result = [shown(t) for t in tasks], shown_obj(result)
    try:
        write_result(out, result)
        if summary_md is not None:
            write_atomic(summary_md, markdown(result))
    except OSError as exc:  # the tasks have run: their outcome (the exit code) matters more than this file
        click.echo(f"agent-run: warning: could not write {exc.filename or out}: {exc}", err=True)
    printed = (json.dumps(result, indent=2, sort_keys=True, ensure_ascii=False) if fmt == "json"
               else "\n".join(table(tasks, summaries)))
    told = "" if fmt == "json" else f"agent-run: batch result: {out}"
    # A reason may carry an endpoint's or a check's words: no line of it may issue a workflow command.
    before, after = stop_commands(f"{printed}\n{told}") if on_github else ("", "")
    if before:
        click.echo(before, err=True)
    click.echo(printed)
    sys.stdout.flush()
    if told:
        click.echo(told, err=True)
    if after:
        click.echo(after, err=True)
        for task, summary in zip(tasks, summaries, strict=True):
            for line in task_annotations(task, summary):
                click.echo(line, err=True)
        write_github_output(result)
        _write_step_summary(result)
    if junit:
        write_junit(junit, [case_of(s, t) for t, s in zip(tasks, summaries, strict=True)])


def refuse(reason: str, fmt: str, on_github: bool, command_name: str = "batch") -> None:
    """Exit 2, nothing run or merged: the reason on stderr (and as a JSON object on stdout with
    --output-format json, shaped like `run`'s usage error), on GitHub as an error and the `results` output."""
    refusal = {"status": "usage_error", "exit_code": USAGE_ERROR, "reason": reason, "tasks": []}
    if fmt == "json":
        click.echo(json.dumps(refusal, indent=2, sort_keys=True, ensure_ascii=False))
    click.echo(f"agent-run: usage_error (exit {USAGE_ERROR}): {reason}", err=True)
    if on_github:
        click.echo(command("error", reason, title=f"agent-run {command_name}: usage error"), err=True)
        write_github_output(refusal)
    sys.exit(USAGE_ERROR)


def write_github_output(result: Mapping[str, Any]) -> None:
    """The step's output `results`: batch.json on one line (fromJSON() in a later step)."""
    path = os.environ.get("GITHUB_OUTPUT")
    if not path:
        return
    text = compact_results_json(result)  # a job's outputs share 1 MB
    try:
        with open(path, "a", encoding="utf-8", newline="\n") as f:
            f.write(outputs_block({"results": text}))
    except OSError as exc:  # as for batch.json: the tasks' outcome (the exit code) matters more
        click.echo(f"agent-run: warning: could not write the step output results: {exc}", err=True)


def _write_step_summary(result: Mapping[str, Any]) -> None:
    """The overview table, after the sections the tasks wrote themselves, in the room they left under
    GitHub's limit for the step."""
    path = os.environ.get("GITHUB_STEP_SUMMARY")
    if not path:
        return
    try:
        target = Path(path)
        room = SUMMARY_LIMIT - (target.stat().st_size if target.exists() else 0)
        if room > 1024:
            with target.open("a", encoding="utf-8", newline="\n") as f:
                f.write(markdown(result, limit=room))
    except OSError as exc:
        click.echo(f"agent-run: warning: could not write the step summary: {exc}", err=True)
