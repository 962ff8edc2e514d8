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

from runner.engine.recorder import RunOutcome
from runner.record.mask import secret_values, with_forms
from runner.report.github import GitHubReporter, endgroup, group, stop_commands
from runner.report.junit import JUnitCase, write_junit
from runner.report.step_summary import sandbox_blocked


def secrets_to_mask() -> list[str]:
    """For `::add-mask::`: the API key and the value of every secret-named variable (runner.record.mask), each with
    the encoded forms the masker searches, so that GitHub hides them in the raw log too. What agent-run itself
    prints is masked already (the summary and events are written through the run's Masker); what the run learns
    besides (env files, passthrough, MCP) is masked once its commands resume (`finish`)."""
    keys = [os.environ.get(k) for k in ("OPENAI_API_KEY", "AGENT_RUN_API_KEY")]
    return with_forms([*(key for key in keys if key), *(value for value, _ in secret_values(os.environ))])


def with_github(run: Callable[[], RunOutcome]) -> tuple[RunOutcome, GitHubReporter]:
    reporter = GitHubReporter(os.environ)
    if reporter.active:
        # The group folds the progress lines; it opens before commands are stopped, or it would not count.
        click.echo(group("agent-run"), err=True)
    for line in reporter.start(secrets_to_mask()):
        click.echo(line, err=True)
    return run(), reporter


def finish(outcome: RunOutcome, reporter: GitHubReporter, *, fmt: str, quiet: bool,
           junit: str | None = None, task_file: str | None = None) -> None:
    summary = outcome.summary
    if fmt == "json":
        click.echo(json.dumps(summary, indent=2, sort_keys=True, ensure_ascii=False))
    elif fmt == "stream-json":
        # The stream's last line, as Claude's `result` message: the (masked) summary, never in events.jsonl.
        # A usage error has no run: the keys a consumer relies on are there all the same (runner/schemas).
        result = {"run_id": None, "answer": None, "usage": {}, "denials": [], **summary, "type": "result"}
        click.echo(json.dumps(result, sort_keys=True, separators=(",", ":"), ensure_ascii=False))
    elif fmt == "text" and summary.get("output") is not None:  # --output-schema: stdout is the JSON value
        click.echo(json.dumps(summary["output"], ensure_ascii=False))
    elif fmt == "text" and summary.get("answer"):
        click.echo(summary["answer"])
    sys.stdout.flush()
    learned = with_forms(outcome.masker.values) if outcome.masker is not None else []
    lines = reporter.finish(summary, summary.get("loop_warnings") or [], learned)
    if reporter.active:
        resume = [line for line in lines if not line.startswith(("::error", "::warning", "::notice"))]
        for line in resume:
            click.echo(line, err=True)
        click.echo(endgroup(), err=True)
        lines = [line for line in lines if line not in resume]
    for line in lines:
        click.echo(line, err=True)
    if junit:
        write_junit(junit, [case_of(summary, task_file or summary.get("task_file") or "task")])
    for line in check_output_lines(summary, reporter.active):
        click.echo(line, err=True)
    for blocked in [] if reporter.active else sandbox_blocked(summary):  # on GitHub: an annotation each
        click.echo(f"agent-run: warning: sandbox_blocked: {blocked}", err=True)
    if not quiet or outcome.exit_code != 0:
        click.echo(ending_line(outcome), err=True)
    if fmt == "text" and outcome.exit_code != 0 and (hint := next_command(outcome)):
        click.echo(f"agent-run: next: {hint}", err=True)
    sys.exit(outcome.exit_code)


def check_output_lines(summary: dict[str, Any], on_github: bool) -> list[str]:
    """A failed check's output tail (summary.json `check.output_tail`), indented; on GitHub between
    stop-commands, since it is the check's output and could otherwise issue workflow commands."""
    check = summary.get("check")
    if not isinstance(check, dict) or check.get("ok") is not False or not check.get("output_tail"):
        return []
    body = [f"  {line}".rstrip() for line in str(check["output_tail"]).splitlines()]
    lines = [f"agent-run: the check failed; the end of its output ({check.get('command')}):", *body]
    if on_github:
        before, after = stop_commands("\n".join(lines))
        lines = [before, *lines, after]
    return lines


def next_command(outcome: RunOutcome) -> str | None:
    """The one command that helps after a failure: approve and run the denied call(s); resume a run a
    budget, a loop guard, the endpoint or a signal stopped; else read the run."""
    summary = outcome.summary
    denials = summary.get("denials") or []
    if len(denials) == 1 and denials[0].get("replay"):
        return str(denials[0]["replay"])
    if denials and summary.get("replay"):
        return f"{summary['replay']}  # runs all {len(denials)} denied calls"
    if summary.get("status") in RESUMABLE and summary.get("resume"):
        return f"{summary['resume']}  # continue where it stopped (add a message to steer it)"
    if summary.get("show"):
        return f"{summary['show']}  # what the run did, turn by turn"
    return None


RESUMABLE = frozenset({"budget_exhausted", "doom_loop", "model_error", "interrupted"})


def case_of(summary: dict[str, Any], task_file: str) -> JUnitCase:
    return JUnitCase(task_file, summary.get("title") or Path(task_file).name, summary)


def ending_line(outcome: RunOutcome) -> str:
    summary = outcome.summary
    where = f" — run dir: {outcome.run_dir}" if outcome.run_dir else ""
    reason = f": {summary['reason']}" if summary.get("reason") else ""
    return f"agent-run: {summary['status']} (exit {outcome.exit_code}){reason}{where}"
