"""A pull request as the API tells it, read before the run: whether its head is a fork's (a comment's payload does
not say), its head commit, and for `--fork-review` its title, body and author; and the check that the workspace is
not the fork's code (a fork review runs on the base branch's checkout)."""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner.github.event import Trigger
from runner.report.github_api import GitHub, GitHubError
from runner.workspace.git import GitError, isolated_env, run_git


@dataclass(frozen=True)
class Pull:
    head_sha: str
    fork: bool  # its head is a branch of another repository
    title: str  # the rest is untrusted: the fork's author wrote it
    body: str
    author: str


def read_pull(gh: GitHub, trigger: Trigger) -> Pull:
    """`GET /repos/{o}/{r}/pulls/{n}`; GitHubError when it cannot be read or names no head commit."""
    pr = _map(gh.request("GET", f"repos/{trigger.owner}/{trigger.repo}/pulls/{trigger.number}"))
    head, base = _map(pr.get("head")), _map(pr.get("base"))
    sha = head.get("sha")
    if not isinstance(sha, str) or not sha:
        raise GitHubError(f"pull request #{trigger.number} names no head commit")
    here = f"{trigger.owner}/{trigger.repo}"
    fork = str(_map(head.get("repo")).get("full_name") or "") != str(_map(base.get("repo")).get("full_name") or here)
    return Pull(sha, fork, str(pr.get("title") or ""), str(pr.get("body") or ""),
                str(_map(pr.get("user")).get("login") or ""))


def checked_out_head(workspace: Path, pull: Pull) -> str | None:
    """Why the workspace cannot be reviewed as the base branch's checkout — it is checked out at the pull request's
    head commit — or None (also outside git: there is no fork commit to be at)."""
    with tempfile.TemporaryDirectory(prefix="agent-run-git-") as home:
        try:
            at = run_git("rev-parse", "HEAD", env=isolated_env(home), cwd=workspace, timeout=30).stdout.strip()
        except GitError:
            return None
    if at != pull.head_sha:
        return None
    return (f"--fork-review: the workspace is checked out at the pull request's head ({at[:12]}), the fork's code; "
            "a fork review runs on the base branch's checkout (actions/checkout without a `ref`), the fork's "
            "changes read through the API")


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}
