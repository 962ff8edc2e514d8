"""`github respond --review`: a --findings run's findings posted on the pull request as one review.

`POST /repos/{o}/{r}/pulls/{n}/reviews` with `commit_id` (the head the agent was given: read before the run),
`event: "COMMENT"` (never an approval or a request for changes: that is a person's call), a body, and one inline
comment per finding whose lines are all RIGHT-side lines of one hunk of the diff (runner/github/hunks.py):
`{path, line, side: "RIGHT"}`, with `start_line`/`start_side` when it spans lines, its `suggestion` as a
```suggestion block. Every other finding — outside the diff, in a file without a patch, past the cap — is listed
in the body. GitHub answers 422 when it cannot place a comment after all (the diff moved, a line it will not
resolve): the review is then posted once more with every finding in the body.

The findings are the model's answer (untrusted), already kept only inside the workspace (runner/report/findings.py):
their text is defused Markdown (no link, image or HTML: an image URL is a channel out, GitHub fetches it), a
suggestion is inside a fence it cannot close, and every body goes through the run's masking, then is cut to GitHub's
65,536 characters (runner/report/markdown.py `fit`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from runner.github.event import Trigger
from runner.github.hunks import diff_lines, hunk_of
from runner.report.github_api import GitHub, GitHubError
from runner.report.markdown import clip, code_span, fence, fit, md_text

MAX_INLINE = 50  # more comments than anyone reads on one review; the rest go to the body
MAX_COMMENT_CHARS = 8_000
MAX_BODY_CHARS = 60_000  # a review body holds 65,536
MAX_LISTED_CHARS = 1_500  # one finding in the body
_ICONS = {"error": "❌", "warning": "⚠️", "note": "ℹ️"}


@dataclass(frozen=True)
class Posted:
    url: str | None  # the review's html_url
    inline: int  # comments on the diff's lines
    in_body: int  # findings listed in the body


def head_sha(gh: GitHub, trigger: Trigger) -> str:
    """The pull request's head commit now (`GET /repos/{o}/{r}/pulls/{n}`): the commit the review is about."""
    pr = gh.request("GET", f"repos/{trigger.owner}/{trigger.repo}/pulls/{trigger.number}")
    sha = ((pr or {}).get("head") or {}).get("sha") if isinstance(pr, dict) else None
    if not isinstance(sha, str) or not sha:
        raise GitHubError(f"pull request #{trigger.number} names no head commit")
    return sha


def placed(findings: Sequence[Mapping[str, Any]],
           files: Sequence[Mapping[str, Any]]) -> tuple[list[Mapping[str, Any]], list[Mapping[str, Any]]]:
    """(findings that go inline, findings for the body): inline when all its lines are RIGHT-side lines of one
    hunk, at most MAX_INLINE of them (the most severe first: the findings come in that order)."""
    ranges = diff_lines(files)
    inline: list[Mapping[str, Any]] = []
    body: list[Mapping[str, Any]] = []
    for f in findings:
        first, last = _lines(f)
        on_diff = f["path"] in ranges and hunk_of(ranges[f["path"]], first, last) is not None
        (inline if on_diff and len(inline) < MAX_INLINE else body).append(f)
    return inline, body


def comment(f: Mapping[str, Any]) -> dict[str, Any]:
    """One inline comment: `line` is the last line, `start_line` the first when the finding spans lines."""
    first, last = _lines(f)
    text = f"{_heading(f)}\n\n{md_text(clip(str(f.get('message') or ''), MAX_COMMENT_CHARS))}"
    if isinstance(f.get("suggestion"), str):
        text += "\n\n" + fence(clip(f["suggestion"], MAX_COMMENT_CHARS), "suggestion")
    out: dict[str, Any] = {"path": f["path"], "line": last, "side": "RIGHT", "body": text}
    if first < last:
        out |= {"start_line": first, "start_side": "RIGHT"}
    return out


def review_body(summary: str, inline: int, listed: Sequence[Mapping[str, Any]], run_url: str,
                note: str = "", dropped: int = 0) -> str:
    """The review's body: the summary, how many findings are inline, the others listed, the job's link."""
    total = inline + len(listed)
    head = f"**agent-run review**: {total} finding{'s' if total != 1 else ''}"
    if total:
        head += f" — {inline} on the diff's lines, {len(listed)} listed here"
    lines = [head, ""]
    if summary.strip():
        lines += [md_text(clip(summary, 4_000)), ""]
    if note:
        lines += [note, ""]
    if listed:
        lines += ["**Findings not on the diff's lines**" if inline else "**Findings**", ""]
        used = sum(len(x) for x in lines)
        for i, f in enumerate(listed):
            first, last = _lines(f)
            where = f"{f['path']}:{first}" + (f"–{last}" if last > first else "")
            item = clip(f"- {_heading(f)} {code_span(where, in_table=False)} — "
                        f"{md_text(str(f.get('message') or ''))}", MAX_LISTED_CHARS)
            if used + len(item) > MAX_BODY_CHARS - 500:
                lines.append(f"- … and {len(listed) - i} more (findings.json in the run directory)")
                break
            lines.append(item)
            used += len(item) + 1
        lines.append("")
    if dropped:
        lines += [f"{dropped} finding{'s' if dropped != 1 else ''} named a path outside the repository: left out.",
                  ""]
    lines.append(f"[job run]({run_url}) · findings.json and findings.sarif are in the run directory")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class Head:
    """The pull request a review is posted on, through `gh`, at commit `sha`."""

    gh: GitHub
    trigger: Trigger
    sha: str


def post_review(head: Head, files: Sequence[Mapping[str, Any]], findings: Mapping[str, Any], summary: str,
                run_url: str, mask: Callable[[str], str], say: Callable[[str], None]) -> Posted:
    """The one review (GitHubError when it could not be posted, even with everything in the body)."""
    gh, trigger, sha = head.gh, head.trigger, head.sha
    where = f"`findings.json` in the run directory, the artifact of [the job run]({run_url})"

    def body(text: str) -> str:  # masked, then cut to GitHub's limit (masking may lengthen it)
        return fit(mask(text), where)

    items = [f for f in findings.get("items") or [] if isinstance(f, Mapping)]
    dropped = int(findings.get("dropped") or 0)
    inline, listed = placed(items, files)
    path = f"repos/{trigger.owner}/{trigger.repo}/pulls/{trigger.number}/reviews"
    payload = {"commit_id": sha, "event": "COMMENT",
               "body": body(review_body(summary, len(inline), listed, run_url, dropped=dropped)),
               "comments": [{**c, "body": body(c["body"])} for c in map(comment, inline)]}
    try:
        return _posted(gh.request("POST", path, json=payload), len(inline), len(listed))
    except GitHubError as exc:
        if exc.status != 422 or not inline:
            raise
        say(f"agent-run: github: the review's inline comments were refused ({exc}); posting it once more with "
            "every finding in its body")
    note = "*GitHub could not place the inline comments on the diff (it moved?): every finding is listed here.*"
    payload = {"commit_id": sha, "event": "COMMENT",
               "body": body(review_body(summary, 0, items, run_url, note, dropped))}
    return _posted(gh.request("POST", path, json=payload), 0, len(items))


def _posted(answer: Any, inline: int, in_body: int) -> Posted:
    url = answer.get("html_url") if isinstance(answer, dict) else None
    return Posted(url if isinstance(url, str) else None, inline, in_body)


def _lines(f: Mapping[str, Any]) -> tuple[int, int]:
    first = int(f["line"])
    return first, max(first, int(f.get("end_line") or first))


def _heading(f: Mapping[str, Any]) -> str:
    severity = str(f.get("severity") or "note")
    rule = f" {code_span(clip(str(f['rule']), 200), in_table=False)}" if f.get("rule") else ""
    return f"{_ICONS.get(severity, '')} **{severity}**{rule}: **{md_text(clip(str(f.get('title') or ''), 500))}**"
