"""The REST client's pure parts: Link pagination and rate-limit waits (runner/report/github_api.py)."""

from __future__ import annotations

import httpx
import pytest

from runner.report.github_api import GitHub, GitHubError, next_link, rate_limit_wait


def test_next_link():
    header = ('<https://api.github.com/repositories/1/issues/5/comments?page=2>; rel="next", '
              '<https://api.github.com/repositories/1/issues/5/comments?page=4>; rel="last"')
    assert next_link(header) == "https://api.github.com/repositories/1/issues/5/comments?page=2"
    assert next_link('<https://x/?page=1>; rel="prev"') is None and next_link(None) is None


def test_rate_limit_waits():
    assert rate_limit_wait(403, {"retry-after": "7"}, now=0) == 7
    assert rate_limit_wait(403, {"x-ratelimit-remaining": "0", "x-ratelimit-reset": "1060"}, now=1000) == 60
    assert rate_limit_wait(403, {"x-ratelimit-remaining": "12"}, now=0) is None  # a plain 403: an answer
    assert rate_limit_wait(500, {}, now=0) is None


def test_a_link_to_another_origin_is_not_followed_with_the_token():
    with GitHub("https://api.github.com", "t") as gh, pytest.raises(GitHubError, match="refusing to follow"):
        gh._url("https://evil.example/repos/o/r/issues/1/comments?page=2")


def test_a_success_that_is_not_json_is_a_github_error():
    """A proxy's HTML page (or an empty body) answering 200: a GitHubError the caller reports, not a ValueError that
    would end `github respond` in a traceback instead of the run's exit code."""
    with GitHub("https://api.github.com", "t") as gh:
        gh._http = httpx.Client(transport=httpx.MockTransport(lambda request: httpx.Response(200, text="<html>")))
        with pytest.raises(GitHubError, match="not JSON") as raised:
            gh.request("PATCH", "repos/o/r/issues/comments/1", json={"body": "x"})
        assert raised.value.status == 200
        with pytest.raises(GitHubError, match="not JSON"):
            list(gh.paginate("repos/o/r/issues/1/comments"))
