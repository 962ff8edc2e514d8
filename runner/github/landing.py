"""`github respond --land`: where the answer's change lands, decided from the API before the run (item 2 of
issue 40). On an issue: a pull request from `agent-run/<sticky key>` whose body says `Closes #N`; on a pull request
of the same repository: the commit pushed onto its head branch (the workspace must be checked out at its head; the
run refuses otherwise, exit 2); on a fork's pull request: refused (its head is not this repository's to push to)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from runner.github.event import Trigger
from runner.report.github_api import GitHub
from runner.run.options import LandTarget


class LandRefused(Exception):
    """Landing cannot be done where it was asked: the reason, for an exit 2 before the run."""


def land_target(gh: GitHub, trigger: Trigger) -> LandTarget:
    """The target of `--land` for this trigger; LandRefused for a fork's pull request; GitHubError when the pull
    request cannot be read."""
    if not trigger.is_pr:
        return LandTarget(key=trigger.key, closes=trigger.number)
    pr = gh.request("GET", f"repos/{trigger.owner}/{trigger.repo}/pulls/{trigger.number}")
    head = _map(_map(pr).get("head"))
    base = _map(_map(pr).get("base"))
    here = f"{trigger.owner}/{trigger.repo}"
    if str(_map(head.get("repo")).get("full_name") or "") != str(_map(base.get("repo")).get("full_name") or here):
        raise LandRefused(f"--land: pull request #{trigger.number} comes from a fork: its head branch is not this "
                          "repository's to push to; landing is refused")
    ref, sha = head.get("ref"), head.get("sha")
    if not isinstance(ref, str) or not isinstance(sha, str) or not ref or not sha:
        raise LandRefused(f"--land: pull request #{trigger.number} names no head branch and commit")
    return LandTarget(key=trigger.key, pull=trigger.number, head_branch=ref, head_sha=sha)


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}
