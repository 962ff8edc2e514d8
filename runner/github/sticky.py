"""The one comment `github respond` keeps per trigger: "working" at the start, the outcome at the end.

It is found again by its marker (`<!-- agent-run:KEY -->`, runner/github/event.py) among the comments the
token's own identity wrote (`own_login`), so a re-run edits it instead of adding a second. The bodies are pure
functions of the run's (masked) summary, cut to GitHub's 65,536 characters; what the model wrote is shown in a
fenced block, so its text cannot render an image or HTML (an image URL is a channel out: GitHub fetches it) in the
conversation.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from runner.report.github_api import GitHub, GitHubError
from runner.report.markdown import GITHUB_BODY_CHARS, clip, code_span, fenced, fit, md_text

MAX_ANSWER_CHARS = 40_000  # a comment holds 65,536 characters (GITHUB_BODY_CHARS): the rest is cut to fit
MAX_DENIALS = 20
MAX_FILES = 50
LOGIN_ENV = "AGENT_RUN_GITHUB_LOGIN"  # the login the token writes as, when GET /user cannot say (the action's)
_ICONS = {"success": "✅", "denied": "⛔", "interrupted": "⏹️"}


def own_login(gh: GitHub, environ: Mapping[str, str]) -> str | None:
    """The login the token writes as: GET /user's (a user's token); when that is refused (to every installation
    token: the job's own GITHUB_TOKEN and an App's), the one LOGIN_ENV names (the action names github-actions[bot]
    for the job's own token); else None — unknown until the first comment posted says it (its `user.login`).
    Never a guess: a guessed github-actions[bot] would take over another workflow's comment."""
    try:
        login = gh.request("GET", "user").get("login")
    except GitHubError as exc:
        if exc.status not in (401, 403, 404):
            raise
        login = None
    return str(login or environ.get(LOGIN_ENV, "").strip() or "") or None


def find_sticky(comments: Iterable[Mapping[str, Any]], marker: str, login: str, skip: int | None = None) -> int | None:
    """The id of the first comment by `login` that starts with `marker`, as every body of ours does (a stranger's
    imitation is not ours, nor one of ours whose answer quotes another trigger's marker); comment `skip` left out."""
    for c in comments:
        author = str((c.get("user") or {}).get("login") or "")
        if author.lower() == login.lower() and str(c.get("body") or "").lstrip().startswith(marker) \
                and isinstance(c.get("id"), int) and c["id"] != skip:
            return int(c["id"])
    return None


def find_own_comment(gh: GitHub, owner: str, repo: str, number: int, marker: str, login: str,
                     skip: int | None = None) -> int | None:
    """The sticky comment of issue `number`, searched from the newest page backwards, each page newest first: a
    conversation longer than the pages read for the task still has its comment found (and edited, not doubled)."""
    pages = gh.pages_newest_first(f"repos/{owner}/{repo}/issues/{number}/comments")
    return find_sticky((c for page in pages for c in reversed(page)), marker, login, skip)


def working_body(marker: str, actor: str, run_url: str) -> str:
    return (f"{marker}\n⏳ **agent-run** is working on @{md_text(actor)}'s request… "
            f"([job run]({run_url}))\n")


def final_body(marker: str, summary: Mapping[str, Any], run_url: str, problems: Iterable[str] = (),
               notes: Iterable[str] = ()) -> str:
    """The outcome: status, reason, the answer, denials with their replay commands, changed files, tokens and
    cost, `notes` (Markdown of agent-run's own: the review posted), links."""
    status = str(summary.get("status") or "?")
    icon = _ICONS.get(status, "❌")
    lines = [marker, f"{icon} **agent-run**: `{status}` (exit {summary.get('exit_code')})", ""]
    if summary.get("reason"):
        lines += [f"**Reason:** {md_text(clip(str(summary['reason']), 2000))}", ""]
    answer = summary.get("answer")
    if isinstance(answer, str) and answer.strip():
        cut = f"\n*(cut at {MAX_ANSWER_CHARS:,} characters)*" if len(answer) > MAX_ANSWER_CHARS else ""
        lines += [fenced(answer[:MAX_ANSWER_CHARS], "text") + cut, ""]
    lines += _denials(summary) + _changed(summary) + _landed(summary)
    foot = [_figures(summary), ""]
    for note in notes:
        foot += [note, ""]
    links = [f"[job run]({run_url})"]
    pushed = isinstance(summary.get("land"), Mapping) and summary["land"].get("mode") in ("branch", "pr") \
        and bool(summary["land"].get("commit"))
    if summary.get("run_id"):
        links.append(f"run {code_span(str(summary['run_id']), in_table=False)} (the run directory is the job's "
                     f"artifact{'' if pushed else '; nothing was pushed'})")
    foot.append(" · ".join(links))
    for problem in problems:
        foot += ["", f"⚠️ {md_text(clip(problem, 500))}"]
    tail = "\n".join(foot) + "\n"
    # What does not fit is cut from the sections above the figures and links, which are kept whole.
    return fit("\n".join(lines), where_whole(summary, run_url), GITHUB_BODY_CHARS - len(tail) - 1) + "\n" + tail


def where_whole(summary: Mapping[str, Any], run_url: str) -> str:
    """Where the whole outcome is, for a body cut to GitHub's limit: the run directory, the job's artifact."""
    run = f" of run {code_span(str(summary['run_id']), in_table=False)}" if summary.get("run_id") else ""
    return f"the whole outcome is `summary.json` and `transcript.md`{run}, in the artifact of [the job run]({run_url})"


def _denials(summary: Mapping[str, Any]) -> list[str]:
    denials = list(summary.get("denials") or [])
    if not denials:
        return []
    out = [f"**Denied calls ({len(denials)})** — approve and run one with its command:", ""]
    for d in denials[:MAX_DENIALS]:
        out.append(f"- {code_span(clip(str(d.get('tool') or '?')), in_table=False)} on "
                   f"{code_span(clip(str(d.get('target') or '?')), in_table=False)}: "
                   f"{code_span(clip(str(d.get('replay') or ''), 1200), in_table=False)}")
    if len(denials) > MAX_DENIALS:
        out.append(f"- … and {len(denials) - MAX_DENIALS} more (summary.json)")
    if summary.get("replay"):
        out += ["", "All of them:", "", fenced(str(summary["replay"]), "sh")]
    return [*out, ""]


def _changed(summary: Mapping[str, Any]) -> list[str]:
    changed = summary.get("changed_files")
    if not isinstance(changed, list) or not changed:
        return []
    out = [f"**Changed files ({len(changed)})** — in the run's `changes.patch`:", ""]
    out += [f"- {code_span(clip(str(p), 500), in_table=False)}" for p in changed[:MAX_FILES]]
    if len(changed) > MAX_FILES:
        out.append(f"- … and {len(changed) - MAX_FILES} more")
    return [*out, ""]


def _landed(summary: Mapping[str, Any]) -> list[str]:
    """--land: the pull request, or the commit pushed onto the pull request's branch, or why nothing landed."""
    land = summary.get("land")
    if not isinstance(land, Mapping):
        return []
    pr = land.get("pull_request")
    if isinstance(pr, Mapping) and pr.get("url"):
        return [f"🔀 **Pull request:** [#{pr.get('number')}]({pr['url']})", ""]
    if land.get("landed") and land.get("commit"):
        return [f"📤 **Pushed** {code_span(str(land['commit'])[:12], in_table=False)} onto "
                f"{code_span(clip(str(land.get('branch') or '')), in_table=False)}", ""]
    return [f"**Not landed:** {md_text(clip(str(land.get('reason') or ''), 1000))}", ""] if land.get("reason") else []


def _figures(summary: Mapping[str, Any]) -> str:
    usage = summary.get("usage") or {}
    tokens = f"{usage.get('prompt_tokens', 0):,} prompt + {usage.get('completion_tokens', 0):,} completion tokens"
    cost = usage.get("cost_usd")
    cost_text = f", ${cost:.4f}" if isinstance(cost, (int, float)) else ""
    return f"{summary.get('turns', 0)} turns, {summary.get('tool_calls', 0)} tool calls, {tokens}{cost_text}"
