"""`agent-run batch-merge DIR...`: the outputs of a batch's shards (`batch --shard I/N`, one per CI machine)
merged into one batch.json, one JUnit file and one step summary, with the batch's exit rule. The merging
is runner/batch/merge.py; the writing is `batch`'s own (runner/cli/batch_output.py). See docs/batch.md."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from runner.batch.merge import MISSING_EXIT, MergeRefused, NotReported, ShardOutput, merge, read_output
from runner.cli.batch_output import format_of, refuse, report
from runner.cli.output import secrets_to_mask
from runner.core.shown import shown
from runner.report.github import mask


@click.command("batch-merge")
@click.argument("dirs", nargs=-1, required=True, metavar="DIR...",
                type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--out", metavar="DIR", type=click.Path(file_okay=False, path_type=Path), default=Path("batch-merged"),
              show_default=True, help="Where to write batch.json, junit.xml and summary.md (the step summary).")
@click.option("--output-format", type=click.Choice(["text", "json"]),
              help="stdout: a table, or the merged batch.json object. [default: text]")
def batch_merge(dirs: tuple[Path, ...], out: Path, output_format: str | None) -> None:
    """Merge a batch's shards (each DIR one shard's output) into one batch.json, JUnit file and step summary.

    \b
    Each DIR holds a shard's batch.json (`batch --shard I/N`), e.g. its
    uploaded runs directory. The merged batch.json lists every task in the
    batch's order, each naming its shard; the exit code is the worst task's,
    at least 1 when a shard of the recorded total never reported (named on
    stderr, in the JUnit file and the summary). Shards of different task
    lists are refused (exit 2). See docs/batch.md.
    """
    fmt = format_of(output_format)
    on_github = os.environ.get("GITHUB_ACTIONS") == "true"
    if on_github:
        for line in mask(secrets_to_mask()):
            click.echo(line, err=True)
    read = [read_output(d) for d in dirs]
    for gone in (r for r in read if isinstance(r, NotReported)):
        click.echo(f"agent-run: batch-merge: {shown(str(gone.dir))}: {gone.why}: not a shard's output", err=True)
    try:
        merged = merge([r for r in read if isinstance(r, ShardOutput)])
    except MergeRefused as exc:
        refuse(str(exc), fmt, on_github, "batch-merge")
        return
    tasks, summaries = list(merged.tasks), list(merged.summaries)
    for index in merged.missing:
        reason = (f"shard {index} of {merged.total} never reported: no batch.json of it among the directories "
                  "given, so its tasks did not run or their results were lost")
        click.echo(f"agent-run: batch-merge: {reason}", err=True)
        tasks.append(f"shard {index}/{merged.total}")
        summaries.append({"status": "failed", "exit_code": MISSING_EXIT, "reason": reason})
    report(merged.result(), tasks, summaries, out=out / "batch.json", fmt=fmt, on_github=on_github,
           junit=out / "junit.xml", summary_md=out / "summary.md")
    sys.exit(merged.exit_code)
