"""Which GitHub events `agent-run github respond` answers, and what it answers: pure functions of the payload.

The payload is the webhook's (`GITHUB_EVENT_PATH`), written by whoever commented or opened the issue: every
string in it is untrusted. What is decided here is only *whether* to go on (the trigger phrase, the comment's
state, a bot, the sticky marker, a fork) and *where* to answer (the conversation's number, the sticky key);
who may ask is the gate's question (runner/github/gate.py), answered by the API, not the payload.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Any

from markdown_it import MarkdownIt

DEFAULT_PHRASE = "@agent-run"
MARKER_PREFIX = "<!-- agent-run:"
# event -> the actions that trigger; comments only when created (an edit could smuggle a mention into old text)
ACTIONS = {
    "issue_comment": ("created",),
    "pull_request_review_comment": ("created",),
    "issues": ("opened", "assigned", "labeled"),
    "pull_request": ("opened", "synchronize", "ready_for_review"),
}
# With --fork-review: a pull request a writer labels (the label's sender is the actor the gate checks), never one the
# fork's author opens or pushes to
FORK_REVIEW_ACTIONS = {"pull_request_target": ("labeled",)}
MAX_CANDIDATES = 1000  # occurrences of the phrase looked at: the first own one among them starts the request
# GitHub renders comments as CommonMark with GFM's extensions; linkify (a bare URL as a link) needs another package:
# a mention right after `/` never counts instead (find_phrase), which is what a bare URL's would be.
_MARKDOWN = MarkdownIt("commonmark").enable(["table", "strikethrough"])
# Elements whose content is quoted, code or a link (GitHub's own mentions skip pre, code and a); `<x/>` opens none.
_QUOTING_TAG = re.compile(r"<(/?)(blockquote|q|code|pre|kbd|samp|tt|a|script|style)(?=[\s>])[^>]*(?<!/)>",
                          re.IGNORECASE)
# Events a stranger can cause (a comment, an issue, a pull request, a review, a discussion): a run the action starts
# with a `task` on one is gated as `github respond` is (runner/github/gate.py, `agent-run github gate`).
GATED_EVENTS = ("issue_comment", "issues", "pull_request", "pull_request_target", "pull_request_review",
                "pull_request_review_comment", "discussion", "discussion_comment")
_HTML_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.DOTALL)


@dataclass(frozen=True)
class Skip:
    reason: str


@dataclass(frozen=True)
class Trigger:
    event: str
    owner: str
    repo: str
    number: int  # the issue or pull request: the sticky comment is an issue comment on it
    is_pr: bool
    actor: str
    key: str  # the sticky marker's KEY
    request: str  # what was asked: the comment after the phrase, or the issue/PR body (untrusted)
    title: str
    body: str
    comment_id: int | None = None
    review: Mapping[str, Any] | None = None  # a review comment's path, line and diff hunk
    request_author: str = ""  # who wrote `request` when not the actor: an issue's or PR's author (a label is asked)

    @property
    def marker(self) -> str:
        return marker(self.key)


def marker(key: str) -> str:
    return f"{MARKER_PREFIX}{key} -->"


def find_phrase(body: str, phrase: str) -> int | None:
    """Where the request starts (just after the phrase's first occurrence in the commenter's own text), or None.
    Case-insensitive; the phrase must stand alone: not inside a word, an address or a path before it, and ending
    at whitespace, punctuation or the end (`@agent-run,` yes; `@agent-runner`, `@agent-run-bot`, `me@agent-run`
    and `example.com/@agent-run` no). Own text is `own_text`'s."""
    if not phrase.strip():
        return None
    pattern = re.compile(r"(?<![\w.@/-])" + re.escape(phrase.strip()) + r"(?![\w-])", re.IGNORECASE)
    found = list(islice(pattern.finditer(body), MAX_CANDIDATES))
    if not found:
        return None
    # Each occurrence becomes a marker of the same length that Markdown reads as plain text (private-use
    # characters the body does not hold): the rendered own text then tells which occurrences are own.
    held = set(body)
    free = [chr(c) for c in range(0xE000, 0xF900) if chr(c) not in held][: len(found) + 1]
    if len(free) <= len(found):  # a body holding the whole private-use area: nothing left to mark with
        return None
    filler, marks = free[0], free[1:]
    marked, at = [], 0
    for match, mark in zip(found, marks, strict=True):
        marked += [body[at:match.start()], mark + filler * (len(match.group()) - 1)]
        at = match.end()
    own = own_text(f"{''.join(marked)}{body[at:]}")
    return next((m.end() for m, mark in zip(found, marks, strict=True) if mark in own), None)


def own_text(body: str) -> str:
    """The text of `body` a reader of the rendered comment sees as its writer's own words: Markdown text as
    GitHub renders it (CommonMark, with GFM tables and strikethrough), less everything quoted (`>` blockquotes
    — their lazy continuation lines too —, `<blockquote>`, `<q>`), shown as code (spans, fenced and indented
    blocks, `<code>`, `<pre>`, `<kbd>`, `<samp>`, `<tt>`), in raw HTML (an HTML block, a comment), in a link
    (its text: GitHub never makes a mention of it either; autolinks, `<a>`) and in an image's alt text."""
    out: list[str] = []
    quoted = linked = 0
    html: dict[str, int] = {}
    for token in _MARKDOWN.parse(body):
        if token.type in ("blockquote_open", "blockquote_close"):
            quoted += token.nesting
        elif token.type == "html_block":
            _html_tags(token.content, html)
        elif token.type == "inline" and not quoted:
            for child in token.children or []:
                if child.type in ("link_open", "link_close"):
                    linked = max(linked + child.nesting, 0)
                elif child.type == "html_inline":
                    _html_tags(child.content, html)
                elif child.type in ("softbreak", "hardbreak"):
                    out.append("\n")
                elif child.type == "text" and not linked and not any(html.values()):
                    out.append(child.content)
            out.append("\n")
    return "".join(out)


def _html_tags(raw: str, depth: dict[str, int]) -> None:
    """Count the quoting and code elements `raw` opens and closes: what they hold is not own text. One left open
    holds the rest of the comment — no mention after it counts (never a run the writer did not ask for)."""
    for match in _QUOTING_TAG.finditer(_HTML_COMMENT.sub("", raw)):
        name = match.group(2).lower()
        depth[name] = max(depth.get(name, 0) + (-1 if match.group(1) else 1), 0)


def decide(event: str, payload: Mapping[str, Any], phrase: str = DEFAULT_PHRASE,
           allowed_actors: Sequence[str] = (), fork_review: bool = False) -> Trigger | Skip:
    """What to answer for this event, or why not. The actor is the comment's author or the event's sender.
    `fork_review` (--fork-review): pull_request_target is answered too, when a writer labels the pull request."""
    if event == "pull_request_target" and not fork_review:
        return Skip("pull_request_target is refused: it runs the base repository's workflow with its secrets "
                    "on a stranger's pull request (--fork-review reviews one read-only, on the base branch's "
                    "checkout)")
    accepted = {**ACTIONS, **FORK_REVIEW_ACTIONS} if fork_review else ACTIONS
    if event not in accepted:
        return Skip(f"the {event or 'unknown'} event is not one github respond answers "
                    f"({', '.join(sorted(accepted))})")
    action = str(payload.get("action") or "")
    if action not in accepted[event]:
        what = "an edited or deleted comment never triggers" if event in ("issue_comment",
                                                                           "pull_request_review_comment") else \
            "a fork review runs only when a writer asks for it (a mention, or a label a writer adds), never on " \
            "the pull request author's own event" if event in FORK_REVIEW_ACTIONS else \
            f"only {', '.join(accepted[event])} trigger"
        return Skip(f"{event} {action or '(no action)'}: {what}")
    owner, _, repo = str(((payload.get("repository") or {}).get("full_name")) or "").partition("/")
    if not owner or not repo:
        return Skip("the event names no repository")
    if event in ("issue_comment", "pull_request_review_comment"):
        return _comment(event, payload, owner, repo, phrase, allowed_actors)
    is_pr = event != "issues"
    thread = payload.get("pull_request" if is_pr else "issue") or {}
    number = thread.get("number")
    if not isinstance(number, int):
        return Skip(f"the {event} event names no number")
    if event == "pull_request" and _from_fork(thread):
        return Skip(f"pull request #{number} comes from a fork: its token is read-only and it has no secrets")
    body = str(thread.get("body") or "")
    if MARKER_PREFIX in body:
        return Skip(f"#{number} carries agent-run's sticky marker")
    return Trigger(event, owner, repo, number, is_pr, _login(payload.get("sender")),
                   f"{'pr' if is_pr else 'issue'}-{number}", body, str(thread.get("title") or ""),
                   body, request_author=_login(thread.get("user")))


def _comment(event: str, payload: Mapping[str, Any], owner: str, repo: str, phrase: str,
             allowed_actors: Sequence[str]) -> Trigger | Skip:
    comment = payload.get("comment") or {}
    user = comment.get("user") or {}
    login, body = _login(user), str(comment.get("body") or "")
    if MARKER_PREFIX in body:
        return Skip("the comment carries agent-run's sticky marker (agent-run's own comment, or one imitating it)")
    if (user.get("type") == "Bot" or login.endswith("[bot]")) and login.lower() not in _lower(allowed_actors):
        return Skip(f"the comment is by the bot {login}, which --allowed-actors does not list")
    start = find_phrase(body, phrase)
    if start is None:
        return Skip(f"the comment does not mention {phrase.strip()}")
    kind = "issue" if event == "issue_comment" else "review"
    thread = payload.get("issue" if event == "issue_comment" else "pull_request") or {}
    number = thread.get("number")
    if not isinstance(number, int) or not isinstance(comment.get("id"), int):
        return Skip(f"the {event} event names no number or comment id")
    review = {k: comment.get(k) for k in ("path", "line", "diff_hunk") if comment.get(k) is not None} \
        if kind == "review" else None
    return Trigger(event, owner, repo, number, event == "pull_request_review_comment" or "pull_request" in thread,
                   login, f"{kind}-comment-{comment['id']}", body[start:].strip(), str(thread.get("title") or ""),
                   str(thread.get("body") or ""), comment["id"], review)


def gated_actors(payload: Mapping[str, Any]) -> tuple[str, ...]:
    """Who must be allowed for a run a gated event starts: the author of the comment or review the event carries
    (whose words a task from it would be), then the event's sender (who acted: an edit, a label) when another."""
    logins = [_login(item.get("user")) for key in ("comment", "review")
              if isinstance(item := payload.get(key), Mapping)]
    out: list[str] = []
    for login in [*logins, _login(payload.get("sender"))]:
        if login and login.lower() not in _lower(out):
            out.append(login)
    return tuple(out)


def _from_fork(pr: Mapping[str, Any]) -> bool:
    head = ((pr.get("head") or {}).get("repo") or {})
    base = ((pr.get("base") or {}).get("repo") or {})
    # Not `head.repo.fork`: that is also true of a branch in this repository when it is itself a fork.
    return head.get("full_name") != base.get("full_name")


def _login(user: Any) -> str:
    return str((user or {}).get("login") or "") if isinstance(user, Mapping) else ""


def _lower(names: Sequence[str]) -> set[str]:
    return {n.strip().lower() for n in names if n.strip()}


def parse_actors(text: str | None) -> tuple[str, ...]:
    """`--allowed-actors a,b, c` as logins."""
    return tuple(n.strip() for n in (text or "").split(",") if n.strip())
