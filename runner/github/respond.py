"""`agent-run github respond`: answer the event the job runs for, in the conversation it came from.

Two steps, so that the CLI can end a skipped event before it starts any GitHub Actions reporting:
`plan` reads the event and decides (trigger, gate: runner/github/gate.py) without running anything; `answer` keeps
the sticky comment, builds the task (runner/github/conversation.py) and runs it through the one run path
(`runner.run.assemble.execute`), so policy, sandbox, budgets and the exit code are exactly `agent-run run`'s.
The token (GITHUB_TOKEN, the job's own environment) stays in the client: the task is built from the payload
and the API's answers, and a command's environment never carries it (runner/tools/env.py); every body posted
goes through the run's masking too.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from runner.core.jsonutil import seconds_text
from runner.core.outcome import UsageError
from runner.engine.recorder import RunOutcome, early_failure
from runner.github.conversation import Context, fetch_context, task_text
from runner.github.event import Skip, Trigger, decide
from runner.github.gate import permission, read_event
from runner.github.landing import LandRefused, land_target
from runner.github.pull import Pull, checked_out_head, read_pull
from runner.github.review import Head, head_sha, post_review
from runner.github.sticky import final_body, find_own_comment, own_login, where_whole, working_body
from runner.record.mask import Masker
from runner.report.github_api import DEFAULT_API_URL, GRACE_ENV, Deadline, GitHub, GitHubError, RetryPolicy, grace_s
from runner.report.markdown import fit, md_text
from runner.run.assemble import execute
from runner.run.options import RunOptions


@dataclass
class Planned:
    trigger: Trigger
    gh: GitHub
    run_url: str
    pull: Pull | None = None  # a pull request the payload does not describe (a comment's, pull_request_target's)


@dataclass
class Answered:
    outcome: RunOutcome
    problems: list[str] = field(default_factory=list)  # what could not be posted or edited


def run_url(environ: Mapping[str, str], trigger: Trigger) -> str:
    server = (environ.get("GITHUB_SERVER_URL") or "https://github.com").rstrip("/")
    repo = environ.get("GITHUB_REPOSITORY") or f"{trigger.owner}/{trigger.repo}"
    run_id = environ.get("GITHUB_RUN_ID")
    return f"{server}/{repo}/actions/runs/{run_id}" if run_id else f"{server}/{repo}/actions"


def command_deadline(opts: RunOptions, started: float) -> Deadline | None:
    """`--timeout` as the whole command's deadline, from `started` (time.monotonic): what GitHub is asked before
    the run comes out of it too."""
    timeout = opts.cli_settings.get("timeout")
    if not isinstance(timeout, int | float) or isinstance(timeout, bool):
        return None
    return Deadline(started + float(timeout), f"--timeout {seconds_text(float(timeout))}")


def plan(environ: Mapping[str, str], phrase: str, allowed: Sequence[str],
         say: Callable[[str], None], deadline: Deadline | None = None, fork_review: bool = False) -> Planned | Skip:
    """The trigger and an open client (bound by `deadline`), or why the event is skipped. UsageError: no event or
    no token; GitHubError: the permission, or whether a comment's pull request is a fork's, could not be learned
    (the API kept failing, or not within `deadline`). A fork's pull request is answered only with `fork_review`."""
    name, payload = read_event(environ)
    decision = decide(name, payload, phrase, allowed, fork_review)
    if isinstance(decision, Skip):
        return decision
    token = environ.get("GITHUB_TOKEN") or ""
    if not token:
        raise UsageError("github respond needs the job's token in GITHUB_TOKEN (env: GITHUB_TOKEN: "
                         "${{ github.token }})")
    gh = GitHub(environ.get("GITHUB_API_URL") or DEFAULT_API_URL, token, retry=RetryPolicy.from_environ(environ),
                on_retry=lambda message: say(f"agent-run: github: {message}"))
    gh.deadline = deadline
    pull = None
    try:
        refused = _permission(gh, decision, allowed)
        # A comment's payload does not say whose the pull request's head is; the API does (pull_request's does).
        if refused is None and decision.is_pr and decision.event != "pull_request":
            pull = _read_pull(gh, decision)
    except BaseException:
        gh.close()
        raise
    if refused or (pull is not None and pull.fork and not fork_review):
        gh.close()
        return Skip(refused or f"pull request #{decision.number} comes from a fork: a request on it is answered "
                               "only with --fork-review (a review-only run on the base branch's checkout)")
    return Planned(decision, gh, run_url(environ, decision), pull)


def _permission(gh: GitHub, trigger: Trigger, allowed: Sequence[str]) -> str | None:
    try:
        return permission(gh, trigger.owner, trigger.repo, trigger.actor, allowed)
    except GitHubError as exc:
        raise GitHubError(f"the permission check failed: {exc}", exc.status) from None


def _read_pull(gh: GitHub, trigger: Trigger) -> Pull:
    try:
        return read_pull(gh, trigger)
    except GitHubError as exc:
        raise GitHubError(f"could not read pull request #{trigger.number}: {exc}", exc.status) from None


def answer(planned: Planned, opts: RunOptions, say: Callable[[str], None], review: bool = False) -> Answered:
    """Post (or take over) the sticky comment, run the task, (--review) post its findings as a review on the pull
    request, edit the comment with the outcome."""
    trigger, gh = planned.trigger, planned.gh
    problems: list[str] = []
    if opts.land not in (None, "none"):  # where it lands is decided before anything is posted or run
        try:
            opts = replace(opts, land_to=land_target(gh, trigger))
        except (LandRefused, GitHubError) as exc:
            gh.close()
            return Answered(early_failure(str(exc) if isinstance(exc, LandRefused) else
                                          f"--land: could not read pull request #{trigger.number}: {exc}"))
    pull = planned.pull
    if opts.fork_review and pull is not None:  # the fork's code is never what the agent reads as the checkout
        if (why := checked_out_head(Path(opts.workspace or os.getcwd()), pull)) is not None:
            gh.close()
            return Answered(early_failure(why))
        trigger = replace(trigger, title=pull.title, body=pull.body)  # as the API has them now
    context, comment_id, sha = Context(), None, pull.head_sha if review and pull is not None else None
    if review and not trigger.is_pr:
        say(f"agent-run: github: --review: #{trigger.number} is an issue, not a pull request: the findings go in "
            "the comment")
    elif review and sha is None:
        try:  # the head first, then the files: the diff the review is placed on is the one the agent is given
            sha = head_sha(gh, trigger)
        except GitHubError as exc:
            _problem(problems, say, f"could not read pull request #{trigger.number}, so no review is posted: {exc}")
    login: str | None = None
    try:
        login = own_login(gh, os.environ)
        if login is not None:
            comment_id = find_own_comment(gh, trigger.owner, trigger.repo, trigger.number, trigger.marker, login)
        context = fetch_context(gh, trigger)
    except GitHubError as exc:
        _problem(problems, say, f"could not read the conversation: {exc}")
    working = working_body(trigger.marker, trigger.actor, planned.run_url)
    comment_id, posted_as = _post(gh, trigger, comment_id, working, problems, say)
    if login is None and posted_as is not None and comment_id is not None:
        comment_id = _take_over(gh, trigger, comment_id, posted_as, working, problems, say)
    task = task_text(trigger, context, review=review and trigger.is_pr, read_only=opts.fork_review)
    if gh.deadline is not None:  # the run gets what is left of --timeout
        opts = replace(opts, cli_settings={**opts.cli_settings, "timeout": max(gh.deadline.left(), 0.001)})
    outcome = execute(replace(opts, task="-", task_text=task))
    masker = outcome.masker or Masker(os.environ)  # the run's: it knows every secret the run was given
    if outcome.summary.get("status") == "interrupted":  # a cancelled job is killed ~7.5 s after SIGINT: no waiting
        gh.retry = replace(gh.retry, retries=0)
    grace = grace_s(os.environ)
    gh.deadline = Deadline.after(grace, f"the {seconds_text(grace)} s GitHub is given after the run ({GRACE_ENV})")
    notes: list[str] = []
    try:
        with _term_interrupts():
            if sha is not None:
                notes = _review(Head(gh, trigger, sha), context, outcome.summary, planned.run_url, masker, problems,
                                say)
            body = masker.mask(final_body(trigger.marker, outcome.summary, planned.run_url, problems, notes))[0]
            # cut again after masking, which may lengthen it (a secret's `[REDACTED:…]`)
            _post(gh, trigger, comment_id, fit(body, where_whole(outcome.summary, planned.run_url)), problems, say)
    except KeyboardInterrupt:  # a signal after the run: the run's outcome stands, the comment says "working"
        _problem(problems, say, "interrupted while posting the review or editing the comment")
    gh.close()
    return Answered(outcome, problems)


@contextmanager
def _term_interrupts() -> Iterator[None]:
    """SIGTERM as SIGINT while GitHub is asked after the run: the request is abandoned, and what the command
    writes after it (stdout, the step's outputs and summary) is still written."""
    def interrupt(_signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def _review(head: Head, context: Context, summary: Mapping[str, Any], url: str, masker: Masker,
            problems: list[str], say: Callable[[str], None]) -> list[str]:
    """The findings as one review; the sticky comment's line about it (none when there were no findings)."""
    findings = summary.get("findings")
    if not isinstance(findings, Mapping) or findings.get("file") is None:
        say("agent-run: github: --review: the run gave no findings (no valid final answer): no review posted")
        return []
    output = summary.get("output")
    text = str(output.get("summary") or "") if isinstance(output, Mapping) else ""
    try:
        posted = post_review(head, context.files, findings, text, url, lambda body: masker.mask(body)[0], say)
    except GitHubError as exc:
        _problem(problems, say, f"could not post the review on #{head.trigger.number}: {exc}")
        return []
    where = f"[the review]({posted.url})" if posted.url else "the review"
    return [f"📝 Findings posted as {where}: {posted.inline} inline comment{'s' if posted.inline != 1 else ''}, "
            f"{posted.in_body} in its body."]


def _post(gh: GitHub, trigger: Trigger, comment_id: int | None, body: str, problems: list[str],
          say: Callable[[str], None]) -> tuple[int | None, str | None]:
    """Edit the sticky comment, or create it (also when the one to edit was deleted: 404): its id (None: neither
    worked), and for one created the login GitHub wrote it as."""
    base = f"repos/{trigger.owner}/{trigger.repo}/issues"
    if comment_id is not None:
        try:
            gh.request("PATCH", f"{base}/comments/{comment_id}", json={"body": body})
            return comment_id, None
        except GitHubError as exc:
            if exc.status != 404:
                _problem(problems, say, f"could not edit comment {comment_id}: {exc}")
                return comment_id, None
            say(f"agent-run: github: comment {comment_id} is gone (404); posting a new one")
    try:
        created = gh.request("POST", f"{base}/{trigger.number}/comments", json={"body": body})
    except GitHubError as exc:
        _problem(problems, say, f"could not post a comment on #{trigger.number}: {exc}")
        return None, None
    if not isinstance(created, dict) or not isinstance(created.get("id"), int):
        return None, None
    author = (created.get("user") or {}).get("login") if isinstance(created.get("user"), dict) else None
    return int(created["id"]), str(author) if author else None


def _take_over(gh: GitHub, trigger: Trigger, posted: int, login: str, body: str, problems: list[str],
               say: Callable[[str], None]) -> int:
    """The token's login learned from the comment just posted (`posted`): an earlier sticky comment by that login
    is the one kept — the new one is deleted, the earlier one says "working" — so a re-run still leaves one comment.
    Which comment is kept: `posted`'s id, or the earlier one's."""
    say(f"agent-run: github: the token writes as {login} (GET /user is refused to it; AGENT_RUN_GITHUB_LOGIN "
        "names it at once)")
    try:
        earlier = find_own_comment(gh, trigger.owner, trigger.repo, trigger.number, trigger.marker, login, posted)
        if earlier is None:
            return posted
        gh.request("DELETE", f"repos/{trigger.owner}/{trigger.repo}/issues/comments/{posted}")
    except GitHubError as exc:  # two comments then, each ours: the new one is the one kept up to date
        say(f"agent-run: github: could not look for or drop an earlier comment of {login}: {exc}")
        return posted
    kept, _ = _post(gh, trigger, earlier, body, problems, say)
    return kept if kept is not None else posted


def _problem(problems: list[str], say: Callable[[str], None], message: str) -> None:
    problems.append(message)
    say(f"agent-run: github: {message}")


def summary_note(problems: Sequence[str]) -> str:
    """Markdown for the step summary: what could not be posted or edited in the conversation."""
    lines = ["### ⚠️ agent-run could not update the conversation", ""]
    lines += [f"- {md_text(p)}" for p in problems]
    return "\n".join(lines) + "\n\n"


