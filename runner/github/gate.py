"""Who may start a run from a GitHub event: `github respond`'s gate, and `agent-run github gate`'s — the one the
action asks before a run it starts with a `task` on an event a stranger can cause (`GATED_EVENTS`).

The answer is GitHub's API's, never the payload's: an actor `--allowed-actors` lists (case-insensitively), or one the
permission API (`GET /repos/{o}/{r}/collaborators/{login}/permission`) gives `admin` or `write` (`maintain` reports
`write`); anything else — `read`, `triage`, `none`, a 404 — is refused. The token is the job's (GITHUB_TOKEN) and
stays in the client.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from runner.core.outcome import UsageError
from runner.github.event import GATED_EVENTS, gated_actors
from runner.report.github_api import DEFAULT_API_URL, GitHub, GitHubError, RetryPolicy

WRITERS = frozenset({"admin", "write"})
MAX_EVENT_BYTES = 25 * 1024 * 1024  # GitHub's webhook payloads are capped at 25 MB
SKIPPED_EXIT = 78  # `github gate`: the run is skipped (GitHub Actions v1's "neutral"; no run status uses it)


def read_event(environ: Mapping[str, str]) -> tuple[str, dict[str, Any]]:
    """GITHUB_EVENT_NAME and the payload GITHUB_EVENT_PATH holds (UsageError when they are missing or broken)."""
    name, path = environ.get("GITHUB_EVENT_NAME", ""), environ.get("GITHUB_EVENT_PATH", "")
    if not name or not path:
        raise UsageError("github respond and github gate need GITHUB_EVENT_NAME and GITHUB_EVENT_PATH (a GitHub "
                         "Actions job)")
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_EVENT_BYTES + 1)
        payload = json.loads(data) if len(data) <= MAX_EVENT_BYTES else None
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot read the event payload GITHUB_EVENT_PATH={path}: {exc}") from None
    if not isinstance(payload, dict):
        raise UsageError(f"the event payload {path} is not a JSON object of at most 25 MB")
    return name, payload


def permission(gh: GitHub, owner: str, repo: str, actor: str, allowed: Sequence[str]) -> str | None:
    """None when `actor` may start a run (listed, or admin/write on the repository), else why not. GitHubError: the
    API kept failing."""
    if not actor:
        return "the event names no actor"
    if actor.lower() in {a.strip().lower() for a in allowed}:
        return None
    try:
        answer = gh.request("GET", f"repos/{owner}/{repo}/collaborators/{actor}/permission")
    except GitHubError as exc:
        if exc.status == 404:
            return f"{actor} is not a collaborator of {owner}/{repo} (the permission check said 404)"
        raise
    level = str(answer.get("permission") if isinstance(answer, dict) else "")
    if level in WRITERS:
        return None
    return f"{actor} has {level or 'no'} permission on {owner}/{repo}; write or admin may ask " \
           "(or list them in --allowed-actors)"


def gate_event(environ: Mapping[str, str], allowed: Sequence[str], say: Callable[[str], None]) -> str | None:
    """None when the event this job runs for may start a run, else why it is skipped. An event a stranger cannot
    cause (push, schedule, workflow_dispatch, …) is not gated. On one that a stranger can, every actor of
    `gated_actors` must be allowed. UsageError: no event, or no token to ask GitHub with; GitHubError: the
    permission could not be learned (the API kept failing)."""
    name, payload = read_event(environ)
    if name not in GATED_EVENTS:
        say(f"agent-run: github gate: a {name} event is not one a stranger can cause: not gated")
        return None
    owner, _, repo = str((payload.get("repository") or {}).get("full_name") or "").partition("/")
    actors = gated_actors(payload)
    if not owner or not repo or not actors:
        return f"the {name} event names no repository or no actor"
    listed = {a.strip().lower() for a in allowed}
    unlisted = [a for a in actors if a.lower() not in listed]
    if unlisted:
        token = environ.get("GITHUB_TOKEN") or ""
        if not token:
            raise UsageError("github gate needs the job's token in GITHUB_TOKEN to ask GitHub whether "
                             f"{', '.join(unlisted)} may start a run (or list them in --allowed-actors)")
        with GitHub(environ.get("GITHUB_API_URL") or DEFAULT_API_URL, token, retry=RetryPolicy.from_environ(environ),
                    on_retry=lambda message: say(f"agent-run: github: {message}")) as gh:
            for actor in unlisted:
                if (refused := permission(gh, owner, repo, actor, allowed)) is not None:
                    return refused
    say(f"agent-run: github gate: a {name} event of {', '.join(actors)}: may start a run")
    return None
