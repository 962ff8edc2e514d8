"""`agent-run github respond --review` (issue 32): a --findings run's findings posted on the pull request as one
review, through the real CLI against the scripted model server and the scripted GitHub REST API
(tests/fakes/github_server.py), which refuses a comment whose lines are not in one hunk of the diff, as GitHub does."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import jsonschema
import pytest

from tests.cli.test_github_respond import job_env, stickies
from tests.fakes.github_server import FakeGitHub
from tests.fakes.openai_server import reply
from tests.github import payloads
from tests.report.test_sarif import SCHEMA

HEAD = "d" * 40
FETCH_PATCH = ("@@ -10,3 +10,5 @@ def fetch(url):\n     session = Session()\n-    retries = 1\n+    retries = 3\n"
               "+    backoff = 2\n+    log(url)\n     return session.get(url)")
FILES = [
    {"sha": "1" * 40, "filename": "src/fetch.py", "status": "modified", "additions": 3, "deletions": 1,
     "changes": 4, "patch": FETCH_PATCH},
    {"sha": "2" * 40, "filename": "logo.png", "status": "modified", "additions": 0, "deletions": 0, "changes": 0},
    {"sha": "3" * 40, "filename": "README.md", "status": "modified", "additions": 1, "deletions": 0, "changes": 1,
     "patch": "@@ -1,2 +1,3 @@\n # hello\n+A retyr on failure.\n more"},
]
ANSWER = {"summary": "Hard-coded retries; a leaked session.", "findings": [
    {"path": "src/fetch.py", "line": 11, "end_line": 12, "severity": "warning", "title": "hard-coded retries",
     "message": "Read them from the settings.", "rule": "config",
     "suggestion": "    retries = settings.retries\n    backoff = settings.backoff"},
    {"path": "src/fetch.py", "line": 30, "severity": "error", "title": "session never closed",
     "message": "Use a with block."},
    {"path": "logo.png", "line": 1, "severity": "note", "title": "large image", "message": "Compress it."},
    {"path": "./README.md", "line": 2, "severity": "note", "title": "typo", "message": "retyr: retry",
     "suggestion": "A retry on failure."},
    {"path": "/etc/passwd", "line": 1, "severity": "error", "title": "outside", "message": "not ours"}]}


@pytest.fixture
def gh() -> Iterator[FakeGitHub]:
    with FakeGitHub(permissions={"alice": "admin"}) as server:
        server.heads[7] = HEAD
        server.files[7] = [dict(f) for f in FILES]
        server.max_per_page = 2  # the files take two pages: the Link header must be followed
        yield server


@pytest.fixture
def respond(agent_run, gh, tmp_path) -> Callable[..., Any]:
    def run(payload: dict[str, Any], *args: str, event: str = "pull_request", **env: str) -> Any:
        return agent_run("github", "respond", *args, env={**job_env(gh, tmp_path, event, payload), **env})

    return run


def _ran(r: Any) -> None:
    assert r.code == 0, r.stderr
    assert r.summary["status"] == "success" and r.events[-1]["type"] == "run_finished"


def test_one_review_with_inline_comments_on_the_diff_and_the_rest_in_its_body(fake, gh, respond):
    fake.add(reply(json.dumps(ANSWER)))
    r = respond(payloads.pull_request("opened"), "--review", "--output-format", "json")
    _ran(r)
    [post] = gh.of("POST", "/pulls/7/reviews$")
    review = post.json
    assert (review["commit_id"], review["event"]) == (HEAD, "COMMENT")
    [fetch, readme] = review["comments"]
    # the span: start_line..line, both RIGHT, in one hunk; its suggestion a suggestion block
    assert {k: v for k, v in fetch.items() if k != "body"} == {
        "path": "src/fetch.py", "start_line": 11, "start_side": "RIGHT", "line": 12, "side": "RIGHT"}
    assert "hard-coded retries" in fetch["body"] and "`config`" in fetch["body"]
    assert fetch["body"].endswith("```suggestion\n    retries = settings.retries\n    backoff = settings.backoff\n```")
    assert {k: v for k, v in readme.items() if k != "body"} == {"path": "README.md", "line": 2, "side": "RIGHT"}
    assert "```suggestion\nA retry on failure.\n```" in readme["body"]
    # outside the diff (line 30 of a changed file; a file without a patch) and left out (outside the workspace)
    body = review["body"]
    assert "2 on the diff's lines, 2 listed here" in body and "Hard\\-coded retries" not in body
    assert "`src/fetch.py:30`" in body and "session never closed" in body and "`logo.png:1`" in body
    assert "hard-coded retries" not in body and "1 finding named a path outside the repository" in body
    assert "/etc/passwd" not in json.dumps(review)
    [stored] = gh.reviews[7]  # GitHub's rule held: every comment's lines are in one hunk
    assert stored["state"] == "COMMENTED" and len(stored["comments"]) == 2
    # the head, then the files page by page, before the run; the review after it
    paths = [(q.method, q.path, q.query.get("page", "1")) for q in gh.requests]
    assert paths.index(("GET", "/repos/octo/hello/pulls/7", "1")) < paths.index(
        ("GET", "/repos/octo/hello/pulls/7/files", "1")) < paths.index(("GET", "/repos/octo/hello/pulls/7/files", "2"))
    task = fake.requests[0]["messages"][1]["content"]
    assert "Review the pull request's changes" in task and "must be exactly one JSON value" in \
        fake.requests[0]["messages"][0]["content"]
    [sticky] = stickies(gh, 7)
    assert f"[the review]({stored['html_url']}): 2 inline comments, 2 in its body" in sticky["body"]
    assert {"findings.json", "findings.sarif"} <= {p.name for p in r.run_dir.iterdir()}
    assert r.summary["findings"]["dropped"] == 1


def test_a_422_is_retried_once_with_every_finding_in_the_body(fake, gh, respond, tmp_path):
    # The diff moves while the agent works (a push): GitHub cannot place the comments on the lines read before.
    moved = [dict(FILES[0], patch="@@ -1,2 +1,2 @@\n-a\n+b\n c"), *FILES[1:2]]
    gh.before("POST", "/reviews$", lambda server: server.files.__setitem__(7, moved))
    fake.add(reply(json.dumps(ANSWER)))
    r = respond(payloads.pull_request("opened"), "--review")
    _ran(r)
    first, retry = gh.of("POST", "/pulls/7/reviews$")
    assert len(first.json["comments"]) == 2 and "comments" not in retry.json
    assert (retry.json["commit_id"], retry.json["event"]) == (HEAD, "COMMENT")
    assert all(t in retry.json["body"] for t in ("hard-coded retries", "session never closed", "large image",
                                                 "typo", "could not place the inline comments"))
    assert "```suggestion" not in retry.json["body"]
    assert "inline comments were refused" in r.stderr and "must be part of the diff" in r.stderr
    [stored] = gh.reviews[7]
    assert stored["comments"] == [] and "0 inline comments, 4 in its body" in stickies(gh, 7)[0]["body"]
    # Refused again: said on stderr and in the step summary; the exit code stays the run's, nothing more is tried.
    fake.restart().add(reply(json.dumps(ANSWER)))
    gh.files[7] = [dict(f) for f in FILES]
    gh.fail("POST", "/reviews$", *[(422, {}, {"message": "Unprocessable Entity", "errors": ["nope"]})] * 2)
    again = respond(payloads.pull_request("opened"), "--review", GITHUB_ACTIONS="true",
                    GITHUB_STEP_SUMMARY=str(tmp_path / "step.md"))
    _ran(again)
    assert len(gh.of("POST", "/pulls/7/reviews$")) == 4 and len(gh.reviews[7]) == 1
    assert "could not post the review on #7" in again.stderr
    assert "could not post the review" in (tmp_path / "step.md").read_text()
    # findings.sarif: valid SARIF 2.1.0, the same alerts (fingerprints) from the second run as from the first
    logs = [json.loads((run.run_dir / "findings.sarif").read_text()) for run in (r, again)]
    for log in logs:
        jsonschema.Draft4Validator(SCHEMA).validate(log)
    prints = [[res["partialFingerprints"] for res in log["runs"][0]["results"]] for log in logs]
    assert prints[0] == prints[1] and len(prints[0]) == 4


def test_review_with_output_schema_is_a_usage_error_before_github_is_asked(fake, gh, respond, workspace):
    (workspace / "s.json").write_text('{"type": "object"}')
    for flag in ("--review", "--findings"):
        r = respond(payloads.pull_request("opened"), flag, "--output-schema", "s.json", "--output-format", "json")
        assert r.code == 2 and json.loads(r.stdout)["status"] == "usage_error", r.stderr
        assert flag in r.stderr and "--output-schema" in r.stderr
    assert gh.requests == [] and fake.requests == [] and not (workspace / ".agent-run").exists()


def test_review_on_an_issue_posts_no_review_and_findings_work_on_respond(fake, gh, respond):
    fake.add(reply(json.dumps(ANSWER)))
    r = respond(payloads.issue_comment("@agent-run review the fetch code"), "--review", "--sarif-denials",
                event="issue_comment")
    _ran(r)
    assert "#5 is an issue, not a pull request" in r.stderr
    assert not gh.of("GET", "/pulls/") and not gh.of("POST", "/reviews")
    assert r.summary["findings"]["by_severity"] == {"error": 1, "warning": 1, "note": 2}
    assert (r.run_dir / "findings.sarif").is_file() and "Review the pull request" not in \
        fake.requests[0]["messages"][1]["content"]


def test_a_pull_request_that_cannot_be_read_gets_no_review_and_the_run_still_answers(fake, gh, respond):
    gh.fail("GET", "/pulls/7$", (404, {}, {"message": "Not Found"}))
    fake.add(reply(json.dumps(ANSWER)))
    r = respond(payloads.pull_request("opened"), "--review")
    _ran(r)
    assert "could not read pull request #7, so no review is posted" in r.stderr
    assert not gh.of("POST", "/reviews") and gh.of("GET", "/pulls/7/files")  # the conversation was still read
    assert "Review the pull request's changes" in fake.requests[0]["messages"][1]["content"]
    [sticky] = stickies(gh, 7)
    assert "`success`" in sticky["body"] and "no review is posted" in sticky["body"]
