"""`agent-run github gate` (issue 41, item 12): the gate of `github respond`, for a run the action starts with a
`task` on an event a stranger can cause. The real CLI against the scripted GitHub REST API: exit 0 (may run), 78
(skipped, with a notice and the step's outputs), 1 (the permission check failed), 2 (no event or no token)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.cli.test_github_respond import gh, job_env  # noqa: F401  (gh: a fixture)
from tests.github import payloads

SKIPPED = 78

CASES = [  # event, payload, --allowed-actors, exit, the permission asked about (None: not asked)
    ("issue_comment", payloads.issue_comment("Fix it"), "", 0, "alice"),
    ("issues", payloads.issues(login="mallory"), "", SKIPPED, "mallory"),
    ("pull_request_target", payloads.pull_request("opened", "mallory", head_repo="mallory/hello"), "", SKIPPED,
     "mallory"),
    ("pull_request_review", payloads.review(login="bob"), "", SKIPPED, "bob"),  # read permission only
    ("pull_request", payloads.pull_request("synchronize", "carol"), "", 0, "carol"),  # maintain
    ("discussion_comment", payloads.discussion_comment("Fix it", "mallory"), "renovate[bot], Mallory", 0, None),
    # alice (admin) edited mallory's comment: whose words they are is asked about too
    ("discussion_comment", payloads.discussion_comment("Fix it", "mallory", sender="alice"), "", SKIPPED, "mallory"),
    ("push", {"ref": "refs/heads/main", "repository": payloads.repository(), "sender": {"login": "mallory"}}, "",
     0, None),  # only a writer can push: not gated
]


@pytest.mark.parametrize(("event", "payload", "allowed", "code", "asked"), CASES,
                         ids=["writer-comment", "stranger-issue", "stranger-pr-target", "reader-review",
                              "maintainer-pr", "listed", "edited-strangers-comment", "push"])
def test_the_gate_lets_a_writer_or_a_listed_actor_through_and_skips_anyone_else(
        agent_run, gh, tmp_path, event: str, payload: dict[str, Any], allowed: str, code: int,  # noqa: F811
        asked: str | None):
    out, summary = tmp_path / "output", tmp_path / "summary.md"
    env = {**job_env(gh, tmp_path, event, payload), "GITHUB_ACTIONS": "true", "GITHUB_OUTPUT": str(out),
           "GITHUB_STEP_SUMMARY": str(summary)}
    r = agent_run("github", "gate", *(["--allowed-actors", allowed] if allowed else []), env=env)
    assert r.code == code, r.stderr
    permission = [q.path.split("/")[-2] for q in gh.of("GET", "/permission$")]
    assert permission[-1:] == ([asked] if asked else [])
    assert gh.of("POST") == [] and gh.of("PATCH") == []
    if code == SKIPPED:  # the step's outputs say skipped, and a notice says why
        assert "::notice title=agent-run%3A skipped::" in r.stderr and asked in r.stderr
        assert "\nskipped\n" in out.read_text() and "skipped" in summary.read_text()
    else:
        assert not out.exists() and "::notice" not in r.stderr


def test_without_a_token_the_gate_refuses_to_guess(agent_run, gh, tmp_path):  # noqa: F811
    env = {**job_env(gh, tmp_path, "issues", payloads.issues(login="alice")), "GITHUB_TOKEN": ""}
    r = agent_run("github", "gate", env=env)
    assert r.code == 2 and "GITHUB_TOKEN" in r.stderr and gh.requests == []
