"""The GitHub REST API, as `agent-run github` uses it: one small client, reusable by whatever else reports to GitHub.

Every request goes to `GITHUB_API_URL` (github.com's `https://api.github.com` when unset; GitHub Enterprise
Server's `https://HOST/api/v3`), authenticated with the job's token. The token lives in this object only: it
is never put in a message, an exception or a URL, and a `Link` to another origin is not followed (it would
carry the token there).

Retries are the runner's own policy for HTTP (runner/model/retry.py: `retry_after`, `backoff`): 5xx, 429 and
GitHub's rate limits — a 403/429 with `retry-after` (the secondary limit) or with `x-ratelimit-remaining: 0`
(the primary one, until `x-ratelimit-reset`) — are retried up to `retries` times with exponential backoff;
a wait the server asks for above `max_wait_s` (AGENT_RUN_MAX_RETRY_WAIT_S) gives up at once. Other 4xx are
answers, never retried. httpx (already a dependency for web_fetch) does the HTTP.

A `Deadline` set on the client bounds every request from then on: each waits for its answer at most until it, a
retry whose wait does not fit before it is not waited for, and the error says which deadline it was (`--timeout`,
the grace after a run: `grace_s`, AGENT_RUN_GITHUB_GRACE_S).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx

from runner.core.jsonutil import seconds_text
from runner.model.retry import backoff, retry_after

DEFAULT_API_URL = "https://api.github.com"
GRACE_ENV = "AGENT_RUN_GITHUB_GRACE_S"  # what GitHub is given after a run: the final edit, a push, a pull request
GRACE_S = 15.0
MAX_PAGES = 50  # 100 items a page: 5,000 comments or files is more than any conversation the agent can read
_LINK = re.compile(r'<([^>]*)>\s*;\s*rel="?([^";]+)"?')


class GitHubError(Exception):
    """A request that did not succeed: `status` is the HTTP status (None: no answer), the message GitHub's own."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class RetryPolicy:
    retries: int = 4
    base_s: float = 1.0
    cap_s: float = 30.0
    max_wait_s: float = 300.0

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> RetryPolicy:
        """The model client's knobs (AGENT_RUN_MAX_RETRIES, _RETRY_BASE_S, _RETRY_CAP_S, _MAX_RETRY_WAIT_S)."""
        def number(name: str, default: float) -> float:
            try:
                return max(0.0, float(environ.get(name, default)))
            except ValueError:
                return default
        return cls(int(number("AGENT_RUN_MAX_RETRIES", cls.retries)), number("AGENT_RUN_RETRY_BASE_S", cls.base_s),
                   number("AGENT_RUN_RETRY_CAP_S", cls.cap_s), number("AGENT_RUN_MAX_RETRY_WAIT_S", cls.max_wait_s))


def grace_s(environ: Mapping[str, str]) -> float:
    """The seconds GitHub's requests after a run may take (GRACE_ENV, at least 1; GRACE_S when unset or bad)."""
    try:
        return max(1.0, float(environ.get(GRACE_ENV) or GRACE_S))
    except ValueError:
        return GRACE_S


@dataclass(frozen=True)
class Deadline:
    """A moment (time.monotonic) no request goes past, and what set it, for the message that names it."""

    at: float
    name: str

    @classmethod
    def after(cls, seconds: float, name: str) -> Deadline:
        return cls(time.monotonic() + seconds, name)

    def left(self) -> float:
        return self.at - time.monotonic()


def next_link(header: str | None, rel_name: str = "next") -> str | None:
    """The `rel="next"` (or `rel_name`) URL of a `Link` header, or None."""
    for url, rel in _LINK.findall(header or ""):
        if rel_name in rel.split():
            return url
    return None


def rate_limit_wait(status: int, headers: Mapping[str, str], now: float) -> float | None:
    """Seconds GitHub asks us to wait before trying again, or None when this is not a rate limit: `retry-after`
    on any 403/429/5xx, else a spent primary limit (`x-ratelimit-remaining: 0`) until `x-ratelimit-reset`."""
    hint = retry_after(dict(headers), now)
    if hint is not None:
        return hint
    if status in (403, 429) and headers.get("x-ratelimit-remaining") == "0":
        try:
            return max(0.0, float(headers.get("x-ratelimit-reset", "")) - now)
        except ValueError:
            return None
    return None


class GitHub:
    """A REST client for one API root and token. `on_retry(message)` hears each retry (stderr in the CLI)."""

    def __init__(self, api_url: str, token: str, *, retry: RetryPolicy | None = None, timeout_s: float = 30.0,
                 on_retry: Callable[[str], None] | None = None, sleep: Callable[[float], None] = time.sleep) -> None:
        self.api_url = api_url.rstrip("/")
        self.retry = retry or RetryPolicy()
        self._on_retry = on_retry or (lambda _message: None)
        self._sleep = sleep
        self._origin = urlsplit(self.api_url)[:2]
        self._timeout_s = timeout_s
        self.deadline: Deadline | None = None  # set by the caller: every request from then on ends by it
        self._http = httpx.Client(timeout=timeout_s, follow_redirects=False, headers={
            "Authorization": f"Bearer {token}", "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": "2022-11-28", "User-Agent": "agent-run"})

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> GitHub:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def request(self, method: str, path: str, *, json: Any = None, params: Mapping[str, Any] | None = None) -> Any:
        """The JSON of a 2xx answer to METHOD path (a path under the API root, or a URL on its origin); None for a
        204 No Content (a DELETE's)."""
        response = self._send(method, path, json, params)
        return None if response.status_code == 204 else _json(response)

    def paginate(self, path: str, params: Mapping[str, Any] | None = None, max_pages: int = MAX_PAGES) -> Iterator[Any]:
        """Every item of a list endpoint, page after page by `Link: rel="next"` (100 a page), at most `max_pages`."""
        url: str | None = path
        query: Mapping[str, Any] | None = {"per_page": 100, **(params or {})}
        for _ in range(max_pages):
            if url is None:
                return
            response = self._send("GET", url, None, query)
            page = _json(response)
            yield from page if isinstance(page, list) else []
            url, query = next_link(response.headers.get("link")), None  # the next URL carries the query itself

    def pages_newest_first(self, path: str, params: Mapping[str, Any] | None = None,
                           max_pages: int = MAX_PAGES) -> Iterator[list[Any]]:
        """The pages of a list endpoint from the last back to the first (`Link: rel="last"`, then `rel="prev"`),
        at most `max_pages` after the first request (which learns where the last page is): what was added last
        is found first, however long the list."""
        query: Mapping[str, Any] = {"per_page": 100, **(params or {})}
        first = self._send("GET", path, None, query)
        url = next_link(first.headers.get("link"), "last")
        if url is None:  # one page only
            yield _page(first)
            return
        for _ in range(max_pages):
            if url is None:
                return
            response = self._send("GET", url, None, None)  # a Link URL carries the query itself
            yield _page(response)
            url = next_link(response.headers.get("link"), "prev")

    def _url(self, path: str) -> str:
        if "://" not in path:
            return f"{self.api_url}/{path.lstrip('/')}"
        if urlsplit(path)[:2] != self._origin:  # a Link elsewhere would take the token with it
            raise GitHubError(f"refusing to follow a link off {self.api_url}: {path.split('?')[0]}")
        return path

    def _send(self, method: str, path: str, json: Any, params: Mapping[str, Any] | None) -> httpx.Response:
        url = self._url(path)
        what = f"{method} {urlsplit(url).path}"
        attempt, error = 0, ""
        while True:
            attempt += 1
            timeout = self._timeout_s
            if self.deadline is not None:
                left = self.deadline.left()
                if left <= 0:
                    raise GitHubError(f"{what}: {error + '; ' if error else ''}{self.deadline.name} has passed")
                timeout = min(timeout, left)
            try:
                response = self._http.request(method, url, json=json, params=params, timeout=timeout)
            except httpx.HTTPError as exc:  # a timeout, a refused or dropped connection: as a 5xx
                status, error, hint = None, f"{type(exc).__name__}", None
            else:
                if response.is_success:
                    return response
                status, error = response.status_code, f"HTTP {response.status_code}: {_message(response)}"
                hint = rate_limit_wait(status, response.headers, time.time())
                if not (status >= 500 or status == 429 or hint is not None):
                    raise GitHubError(f"{what}: {error}", status)
            if hint is not None and hint > self.retry.max_wait_s:
                raise GitHubError(f"{what}: {error}; GitHub asked to wait {seconds_text(hint)} s, more than the "
                                  f"{seconds_text(self.retry.max_wait_s)} s agent-run waits for "
                                  f"(AGENT_RUN_MAX_RETRY_WAIT_S)", status)
            if attempt > self.retry.retries:
                raise GitHubError(f"{what}: {error} (after {attempt} attempts)", status)
            delay = backoff(attempt, self.retry.base_s, self.retry.cap_s, hint)
            if self.deadline is not None and delay >= self.deadline.left():  # waiting would only end past it
                asked = "GitHub asked to wait" if hint is not None else "the next retry is"
                raise GitHubError(f"{what}: {error}; {asked} {seconds_text(delay)} s, past the end of "
                                  f"{self.deadline.name}: not waited for", status)
            self._on_retry(f"{what}: {error}; retry {attempt} of {self.retry.retries} in {seconds_text(delay)} s")
            self._sleep(delay)


def _json(response: httpx.Response) -> Any:
    """A 2xx answer's JSON. One that is not JSON (a proxy's page, an empty body) is a GitHubError like any other
    failed request, so that a caller's handling of GitHub's failures covers it (after the run: its exit code
    stands, the problem is reported)."""
    try:
        return response.json()
    except ValueError:
        raise GitHubError(f"{response.request.method} {response.request.url.path}: HTTP {response.status_code}: "
                          "the answer is not JSON", response.status_code) from None


def _page(response: httpx.Response) -> list[Any]:
    page = _json(response)
    return page if isinstance(page, list) else []


def _message(response: httpx.Response) -> str:
    """GitHub's own one-line explanation (`message` of its JSON error, and its `errors`: a 422 says there what it
    refused), cut short."""
    try:
        data = response.json()
        text = str(data.get("message") if isinstance(data, dict) else data)
        errors = data.get("errors") if isinstance(data, dict) else None
        if isinstance(errors, list) and errors:
            text += " (" + "; ".join(str(e.get("message") or e) if isinstance(e, dict) else str(e)
                                     for e in errors[:3]) + ")"
    except ValueError:
        text = response.text
    text = " ".join(text.split())
    return text[:200] + ("…" if len(text) > 200 else "")
