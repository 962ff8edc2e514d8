"""The one comment `github respond` keeps per trigger: "working" at the start, the outcome at the end.

It is found again by its marker (`<!-- agent-run:KEY -->`, runner/github/event.py) among the comments the
token's own identity wrote, so a re-run edits it instead of adding a second. The bodies are pure functions of
the run's (masked) summary; what the model wrote is shown in a fenced block, so its text cannot render an
image or HTML (an image URL is a channel out: GitHub fetches it) in the conversation.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from runner.report.github_api import GitHub, GitHubError
from runner.report.markdown import clip, code_span, fenced, md_text

MAX_ANSWER_CHARS = 40_000  # a comment holds 65,536 characters
MAX_DENIALS = 20
MAX_FILES = 50
FALLBACK_LOGIN = "github-actions[bot]"  # who GITHUB_TOKEN writes as; its token cannot read GET /user
_ICONS = {"success": "✅", "denied": "⛔", "interrupted": "⏹️"}


def own_login(gh: GitHub) -> str:
    """The login the token writes as: GET /user for a user's token; an installation token (GITHUB_TOKEN)
    is refused that (403) and writes as github-actions[bot]."""
    try:
        return str(gh.request("GET", "user").get("login") or FALLBACK_LOGIN)
    except GitHubError as exc:
        if exc.status in (401, 403, 404):
            return FALLBACK_LOGIN
        raise


def find_sticky(comments: Iterable[Mapping[str, Any]], marker: str, login: str) -> int | None:
    """The id of the first comment by `login` that starts with `marker`, as every body of ours does (a stranger's
    imitation is not ours, nor one of ours whose answer quotes another trigger's marker)."""
    for c in comments:
        author = str((c.get("user") or {}).get("login") or "")
        if author.lower() == login.lower() and str(c.get("body") or "").lstrip().startswith(marker) \
                and isinstance(c.get("id"), int):
            return int(c["id"])
    return None


def find_own_comment(gh: GitHub, owner: str, repo: str, number: int, marker: str, login: str) -> int | None:
    """The sticky comment of issue `number`, searched from the newest page backwards, each page newest first: a
    conversation longer than the pages read for the task still has its comment found (and edited, not doubled)."""
    pages = gh.pages_newest_first(f"repos/{owner}/{repo}/issues/{number}/comments")
    return find_sticky((c for page in pages for c in reversed(page)), marker, login)


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
    lines += [_figures(summary), ""]
    for note in notes:
        lines += [note, ""]
    links = [f"[job run]({run_url})"]
    pushed = isinstance(summary.get("land"), Mapping) and summary["land"].get("mode") in ("branch", "pr") \
        and bool(summary["land"].get("commit"))
    if summary.get("run_id"):
        links.append(f"run {code_span(str(summary['run_id']), in_table=False)} (the run directory is the job's "
                     f"artifact{'' if pushed else '; nothing was pushed'})")
    lines.append(" · ".join(links))
    for problem in problems:
        lines += ["", f"⚠️ {md_text(clip(problem, 500))}"]
    return "\n".join(lines) + "\n"


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
