"""`agent-run github respond`: asked from a comment, answered in the conversation (runner/github/); `agent-run github
gate`: whether the event may start a run at all (the action's gate before a run with a task)."""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

import click

from runner.cli.flags import named
from runner.cli.output import finish, with_github
from runner.cli.run import options_from, run_options
from runner.core.outcome import UsageError
from runner.engine.recorder import RunOutcome, early_failure
from runner.github.event import DEFAULT_PHRASE, Skip, parse_actors
from runner.github.gate import SKIPPED_EXIT, gate_event
from runner.github.respond import Answered, answer, command_deadline, plan, summary_note
from runner.report.github import GitHubReporter, append_step_summary, command, outputs_block
from runner.report.github_api import GitHubError
from runner.report.markdown import md_text
from runner.run.review_only import refusal


@click.group("github")
def github() -> None:
    """Answer GitHub events in their conversation (docs/github.md)."""


def _say(line: str) -> None:
    click.echo(line, err=True)


@github.command("respond")
@run_options("respond")
@click.option("--trigger-phrase", default=DEFAULT_PHRASE, show_default=True, metavar="TEXT",
              help="A comment triggers only when it says this (case-insensitive, outside quotes and code).")
@click.option("--allowed-actors", metavar="LIST",
              help="Logins that may trigger without write access (comma-separated; bots included).")
@named("respond", "--output-schema", "--findings")
@click.option("--review", is_flag=True,
              help="On a pull request, post the findings as one review: inline comments on the diff's lines "
                   "(suggestions as suggested changes), the others in its body. Implies --findings.")
@named("respond", "--sarif-denials", "--tools", "--preset", "--fork-review")
def respond(trigger_phrase: str, allowed_actors: str | None, review: bool, **kw: Any) -> None:
    """Answer the event this GitHub Actions job runs for: a comment that mentions the trigger phrase, an
    opened issue or pull request. A writer's request runs as `agent-run run` would (policy, sandbox, budgets,
    exit code); one comment in the conversation says it is working and then what came of it.

    \b
    Skipped (exit 0, no run directory): a comment without the phrase,
    an edited comment, a bot's, the sticky comment itself, an actor
    without write access, a fork's pull request and pull_request_target
    (without --fork-review).
    Otherwise the exit code is the run's, as for `agent-run run`.
    """
    started = time.monotonic()  # --timeout bounds the whole command: GitHub's requests before the run too
    opts, fmt = options_from("-", kw, findings=kw["findings"] or review)
    if opts.output_schema and opts.findings:  # refused before anything is asked of GitHub or posted there
        flag = "--review (which implies --findings)" if review else "--findings"
        return _end(early_failure(f"{flag} is an output schema of its own: it cannot be used with "
                                  "--output-schema"), fmt, kw["quiet"])
    if opts.fork_review and (refused := refusal(opts, os.environ)) is not None:
        return _end(early_failure(refused), fmt, kw["quiet"])
    try:
        planned = plan(os.environ, trigger_phrase, parse_actors(allowed_actors), _say,
                       command_deadline(opts, started), fork_review=opts.fork_review)
    except UsageError as exc:
        return _end(early_failure(str(exc)), fmt, kw["quiet"])
    except GitHubError as exc:
        return _end(RunOutcome(1, {"status": "failed", "exit_code": 1, "reason": str(exc)}, None), fmt, kw["quiet"])
    if isinstance(planned, Skip):
        return _skipped(planned.reason, fmt)
    box: list[Answered] = []

    def run() -> RunOutcome:
        box.append(answer(planned, opts, _say, review))
        return box[0].outcome

    outcome, reporter = with_github(run)
    if box and box[0].problems and reporter.active:
        append_step_summary(os.environ, summary_note(box[0].problems))
    finish(outcome, reporter, fmt=fmt, quiet=kw["quiet"], junit=kw["junit"], task_file="-")


@github.command("gate")
@click.option("--allowed-actors", metavar="LIST",
              help="Logins that may start a run without write access (comma-separated; bots included).")
def gate(allowed_actors: str | None) -> None:
    """Exit 0 when the event this GitHub Actions job runs for may start a run; exit 78 when it may not (skipped:
    a notice says why, the step's outputs say `skipped`). The action asks it before a run it starts with a
    `task` on an event a stranger can cause: issue_comment, issues, pull_request, pull_request_target,
    pull_request_review, pull_request_review_comment, discussion, discussion_comment.

    \b
    The same gate as `github respond`: the author of the event's
    comment or review, and its sender, each listed in
    --allowed-actors or with write or admin permission on the
    repository (GitHub's permission API, with GITHUB_TOKEN). Any other
    event is not gated (exit 0). Exit 1: the permission check kept
    failing; exit 2: no event, or no token to ask with.
    """
    try:
        refused = gate_event(os.environ, parse_actors(allowed_actors), _say)
    except UsageError as exc:
        return _end(early_failure(str(exc)), "text", False)
    except GitHubError as exc:
        return _end(RunOutcome(1, {"status": "failed", "exit_code": 1,
                                   "reason": f"the permission check failed: {exc}"}, None), "text", False)
    if refused is not None:
        return _skipped(refused, "text", SKIPPED_EXIT)
    sys.exit(0)


def _end(outcome: RunOutcome, fmt: str, quiet: bool) -> None:
    """An ending before any run: as `agent-run run` ends a usage error."""
    finish(outcome, GitHubReporter(os.environ), fmt=fmt, quiet=quiet)


def _skipped(reason: str, fmt: str, code: int = 0) -> None:
    """Exit `code` (0: respond's skip; SKIPPED_EXIT: the gate's) with a notice saying why, the step's outputs saying
    `skipped` (its exit-code 0: nothing failed); no model request, no run directory."""
    result = {"type": "result", "status": "skipped", "exit_code": 0, "reason": reason, "run_id": None}
    if fmt == "json":
        click.echo(json.dumps(result, indent=2, sort_keys=True, ensure_ascii=False))
    elif fmt == "stream-json":
        line = {**result, "answer": None, "usage": {}, "denials": []}
        click.echo(json.dumps(line, sort_keys=True, separators=(",", ":"), ensure_ascii=False))
    reporter = GitHubReporter(os.environ)
    if reporter.active:
        click.echo(command("notice", reason, title="agent-run: skipped"), err=True)
        if path := os.environ.get("GITHUB_OUTPUT"):
            with open(path, "a", encoding="utf-8") as f:
                f.write(outputs_block({"status": "skipped", "exit-code": "0", "run-dir": "", "run-dirs": "",
                                       "denials": "0"}))
        append_step_summary(os.environ, f"**agent-run**: skipped — {md_text(reason)}\n\n")
    else:
        click.echo(f"agent-run: skipped: {reason}", err=True)
    sys.stdout.flush()
    sys.exit(code)
