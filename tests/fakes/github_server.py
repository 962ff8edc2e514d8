"""A scripted GitHub REST API on 127.0.0.1, answering as the documented API does, for `agent-run github`.

It keeps issue comments (per issue number), pull request files and collaborator permissions, and answers:
- `GET /repos/{o}/{r}/collaborators/{login}/permission`: 200 `{"permission": …, "role_name": …, "user": …}` for a
  login in `permissions`, else 404 `{"message": "Not Found"}`;
- `GET /user`: 403 "Resource not accessible by integration" (what GITHUB_TOKEN, an installation token, gets),
  or 200 with `user_login` when a test sets it (a user's token);
- what the token writes (comments, reviews) is written as `writer`: `github-actions[bot]` for the job's token, an
  App's `NAME[bot]` for an App's installation token;
- `GET /repos/{o}/{r}/issues/{n}/comments`, `GET /repos/{o}/{r}/pulls/{n}/files`: pages of `per_page` (default 30,
  at most `max_per_page`, 100 as GitHub) by `page`, with a `Link` header (`rel="next"`, `rel="last"`, …);
- `GET /repos/{o}/{r}/pulls/{n}`: the pull request with its title, body and author (`texts[n]`: (title, body, login);
  else a default), its head (`retry` at `heads[n]`, a fork's for a number in `forks`) and base (`main`), 404 for an
  unknown number;
- `POST /repos/{o}/{r}/pulls/{n}/reviews`: 200 and the review (kept in `reviews`), or 422 as GitHub refuses one: an
  unknown `event`, no `body` for COMMENT/REQUEST_CHANGES, a `commit_id` that is not the head, a comment whose path
  has no patch, whose `line` is not a line of a hunk on its `side`, or whose `start_line` is not before it in the
  same hunk. The hunks are read from each patch's `@@ -a,b +c,d @@` headers (not the way the runner counts them);
- `GET /repos/{o}/{r}/pulls?head=OWNER:BRANCH&state=open` (the open pull requests from that branch),
  `POST /repos/{o}/{r}/pulls` (201 and the pull request, kept in `pulls`; 422 without title, head and base, or
  with a second open one from the same head, as GitHub answers) and `PATCH /repos/{o}/{r}/pulls/{n}` (title, body);
  both 422 for a body over GitHub's 65,536 characters;
- `POST /repos/{o}/{r}/issues/{n}/comments` (201, the comment, written as `writer`),
  `PATCH /repos/{o}/{r}/issues/comments/{id}` (200; 404 for a deleted comment) and `DELETE` of one (204, 404); a
  body that is not `{"body": string}` is 422, and so is one over GitHub's 65,536 characters (a review's body or
  inline comment too);
- a missing or wrong `Authorization` (`Bearer TOKEN` or `token TOKEN`) is 401 "Bad credentials".
`fail(method, path_regex, *responses)` answers the next matching requests with `(status, headers, body)`
tuples first (a 500, a secondary rate limit: 403 with `retry-after`); `before(method, path_regex, fn)` runs
`fn(server)` once, just before the next matching request is answered (someone deletes a comment meanwhile);
`hold(method, path_regex)` never answers the next matching request: it sets `held` and keeps the connection
until the server closes (or HOLD_CAP_S, which only stops a hang), then drops it.
Every request is recorded in `requests` (method, path, query, headers, json).
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.fakes.loopback import Loopback, QuietHandler

TOKEN = "ghs_fakeInstallationToken0123456789abcdefABCDEF"
HOLD_CAP_S = 120.0
BOT = {"login": "github-actions[bot]", "id": 41898282, "type": "Bot"}
MAX_BODY = 65_536  # GitHub's limit on a comment's, a review's or a pull request's body, in characters


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    json: Any


@dataclass
class FakeGitHub:
    owner: str = "octo"
    repo: str = "hello"
    token: str = TOKEN
    permissions: dict[str, str] = field(default_factory=dict)  # login -> admin | maintain | write | triage | read
    user_login: str | None = None  # GET /user: None answers 403 as for an installation token
    writer: dict[str, Any] = field(default_factory=lambda: dict(BOT))  # whom the token's comments are written as
    max_per_page: int = 100
    comments: dict[int, dict[str, Any]] = field(default_factory=dict)  # id -> comment (with issue number)
    files: dict[int, list[dict[str, Any]]] = field(default_factory=dict)  # pull number -> files
    heads: dict[int, str] = field(default_factory=dict)  # pull number -> head commit sha
    reviews: dict[int, list[dict[str, Any]]] = field(default_factory=dict)  # pull number -> posted reviews
    pulls: dict[int, dict[str, Any]] = field(default_factory=dict)  # pull requests opened through the API
    forks: set[int] = field(default_factory=set)  # pull numbers (of `heads`) whose head is a fork's branch
    texts: dict[int, tuple[str, str, str]] = field(default_factory=dict)  # pull number -> (title, body, author)
    requests: list[Request] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._next_id = 1000
        self._faults: list[tuple[str, re.Pattern[str], list[tuple[int, dict[str, str], Any]]]] = []
        self._hooks: list[tuple[str, re.Pattern[str], Callable[[FakeGitHub], None]]] = []
        self._holds: list[tuple[str, re.Pattern[str]]] = []
        self.held = threading.Event()  # a held request has arrived
        self._closing = threading.Event()
        fake = self

        class Handler(QuietHandler):
            def _any(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                fake._handle(self, raw)

            do_GET = do_POST = do_PATCH = do_DELETE = _any

        self._server = Loopback(Handler)
        self.url = self._server.url

    def __enter__(self) -> FakeGitHub:
        self._server.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._closing.set()
        self._server.stop()

    # -- the test's side --------------------------------------------------------------------------------

    def add_comment(self, number: int, body: str, user: dict[str, Any] | None = None) -> dict[str, Any]:
        with self._lock:
            return self._new_comment(number, body, user or {"login": "someone", "id": 7, "type": "User"})

    def delete_comment(self, comment_id: int) -> None:
        with self._lock:
            self.comments.pop(comment_id, None)

    def fail(self, method: str, path: str, *responses: tuple[int, dict[str, str], Any]) -> None:
        self._faults.append((method, re.compile(path), list(responses)))

    def before(self, method: str, path: str, fn: Callable[[FakeGitHub], None]) -> None:
        self._hooks.append((method, re.compile(path), fn))

    def hold(self, method: str, path: str) -> None:
        self._holds.append((method, re.compile(path)))

    def of(self, method: str, path: str = "") -> list[Request]:
        return [r for r in self.requests if r.method == method and re.search(path, r.path)]

    def on(self, number: int) -> list[dict[str, Any]]:
        return [c for c in self.comments.values() if c["issue_number"] == number]

    # -- the server's side ------------------------------------------------------------------------------

    def _new_comment(self, number: int, body: str, user: dict[str, Any]) -> dict[str, Any]:
        self._next_id += 1
        cid = self._next_id
        comment = {"id": cid, "node_id": f"IC_{cid}", "body": body, "user": user, "issue_number": number,
                   "url": f"{self.url}/repos/{self.owner}/{self.repo}/issues/comments/{cid}",
                   "html_url": f"https://github.com/{self.owner}/{self.repo}/issues/{number}#issuecomment-{cid}",
                   "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z",
                   "author_association": "NONE"}
        self.comments[cid] = comment
        return comment

    def _handle(self, h: BaseHTTPRequestHandler, raw: bytes) -> None:
        parts = urlsplit(h.path)
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            return _send(h, 400, {"message": "Problems parsing JSON"})
        with self._lock:
            self.requests.append(Request(h.command, parts.path, query, {k.lower(): v for k, v in h.headers.items()},
                                         body))
            hold = next((x for x in self._holds if x[0] == h.command and x[1].search(parts.path)), None)
            if hold is not None:
                self._holds.remove(hold)
        if hold is not None:  # no answer: the client's deadline is what ends its wait
            self.held.set()
            self._closing.wait(HOLD_CAP_S)
            h.close_connection = True
            return None
        with self._lock:
            for hook in list(self._hooks):
                if hook[0] == h.command and hook[1].search(parts.path):
                    self._hooks.remove(hook)
                    hook[2](self)
            for method, pattern, responses in self._faults:
                if method == h.command and pattern.search(parts.path) and responses:
                    status, headers, payload = responses.pop(0)
                    return _send(h, status, payload, headers)
            auth = h.headers.get("authorization") or ""
            if auth not in (f"Bearer {self.token}", f"token {self.token}"):
                return _send(h, 401, {"message": "Bad credentials", "documentation_url": "https://docs.github.com/rest"})
            status, payload, headers = self._route(h.command, parts.path, query, body)
        return _send(h, status, payload, headers)

    def _route(self, method: str, path: str, query: dict[str, str], body: Any) -> tuple[int, Any, dict[str, str]]:
        base = f"/repos/{self.owner}/{self.repo}"
        not_found = (404, {"message": "Not Found", "documentation_url": "https://docs.github.com/rest"}, {})
        if method == "GET" and path == "/user":
            if self.user_login is None:
                return 403, {"message": "Resource not accessible by integration"}, {}
            return 200, {"login": self.user_login, "id": 1, "type": "User"}, {}
        if not path.startswith(base + "/"):
            return not_found
        rest = path[len(base):]
        if method == "GET" and (m := re.fullmatch(r"/collaborators/([^/]+)/permission", rest)):
            permission = self.permissions.get(m.group(1))
            if permission is None:
                return not_found
            legacy = {"maintain": "write", "triage": "read"}.get(permission, permission)
            return 200, {"permission": legacy, "role_name": permission,
                         "user": {"login": m.group(1), "type": "User"}}, {}
        if m := re.fullmatch(r"/issues/(\d+)/comments", rest):
            number = int(m.group(1))
            if method == "GET":
                return self._page(path, query, [_public(c) for c in self.comments.values()
                                                if c["issue_number"] == number])
            if method == "POST":
                if not isinstance(body, dict) or not isinstance(body.get("body"), str):
                    return 422, {"message": "Invalid request.\n\n\"body\" wasn't supplied."}, {}
                if len(body["body"]) > MAX_BODY:
                    return _too_long("IssueComment")
                return 201, _public(self._new_comment(number, body["body"], dict(self.writer))), {}
        if method == "DELETE" and (m := re.fullmatch(r"/issues/comments/(\d+)", rest)):
            return (204, None, {}) if self.comments.pop(int(m.group(1)), None) is not None else not_found
        if method == "PATCH" and (m := re.fullmatch(r"/issues/comments/(\d+)", rest)):
            comment = self.comments.get(int(m.group(1)))
            if comment is None:
                return not_found
            if not isinstance(body, dict) or not isinstance(body.get("body"), str):
                return 422, {"message": "Invalid request.\n\n\"body\" wasn't supplied."}, {}
            if len(body["body"]) > MAX_BODY:
                return _too_long("IssueComment")
            comment.update(body=body["body"], updated_at="2026-01-01T00:01:00Z")
            return 200, _public(comment), {}
        if rest == "/pulls" or (re.fullmatch(r"/pulls/\d+", rest) and int(rest[7:]) in self.pulls):
            return self._pulls(method, rest, query, body)
        if method == "GET" and (m := re.fullmatch(r"/pulls/(\d+)/files", rest)):
            return self._page(path, query, self.files.get(int(m.group(1)), []))
        if method == "GET" and (m := re.fullmatch(r"/pulls/(\d+)", rest)) and int(m.group(1)) in self.heads:
            number = int(m.group(1))
            here = {"full_name": f"{self.owner}/{self.repo}"}
            head = {"full_name": f"stranger/{self.repo}"} if number in self.forks else here
            title, text, author = self.texts.get(number, ("Retry the download", "Adds a retry.", "alice"))
            return 200, {"number": number, "state": "open", "title": title, "body": text,
                         "user": {"login": author, "type": "User"},
                         "head": {"ref": "retry", "sha": self.heads[number], "repo": head},
                         "base": {"ref": "main", "sha": "b" * 40, "repo": here}}, {}
        if method == "POST" and (m := re.fullmatch(r"/pulls/(\d+)/reviews", rest)) and int(m.group(1)) in self.heads:
            return self._review(int(m.group(1)), body)
        return not_found

    def _pulls(self, method: str, rest: str, query: dict[str, str], body: Any) -> tuple[int, Any, dict[str, str]]:
        if method in ("POST", "PATCH") and isinstance(body, dict) and len(str(body.get("body") or "")) > MAX_BODY:
            return _too_long("PullRequest")
        if method == "GET" and rest == "/pulls":
            state, head = query.get("state", "open"), query.get("head")
            found = [p for p in self.pulls.values() if state in ("all", p["state"])
                     and (head is None or head == f"{self.owner}:{p['head']['ref']}")]
            return 200, found, {}
        if method == "POST" and rest == "/pulls":
            if not isinstance(body, dict) or not all(isinstance(body.get(k), str) for k in ("title", "head", "base")):
                return _unprocessable("Invalid request.\n\n\"title\", \"head\" and \"base\" are required.")
            if any(p["head"]["ref"] == body["head"] and p["state"] == "open" for p in self.pulls.values()):
                return _unprocessable(f"A pull request already exists for {self.owner}:{body['head']}.")
            self._next_id += 1
            number = self._next_id
            self.pulls[number] = {"number": number, "state": "open", "title": body["title"],
                                  "body": body.get("body") or "", "draft": bool(body.get("draft")),
                                  "head": {"ref": body["head"]}, "base": {"ref": body["base"]},
                                  "html_url": f"https://github.com/{self.owner}/{self.repo}/pull/{number}"}
            return 201, self.pulls[number], {}
        if method == "PATCH":
            pull = self.pulls[int(rest[7:])]
            pull.update({k: v for k, v in (body or {}).items() if k in ("title", "body", "state")})
            return 200, pull, {}
        return 404, {"message": "Not Found"}, {}

    def _review(self, number: int, body: Any) -> tuple[int, Any, dict[str, str]]:
        if not isinstance(body, dict):
            return _unprocessable("Invalid request.")
        event = body.get("event")
        if event not in (None, "APPROVE", "REQUEST_CHANGES", "COMMENT"):
            return _unprocessable(f"Invalid request.\n\n{event!r} is not a member of the event enum.")
        if event in ("REQUEST_CHANGES", "COMMENT") and not body.get("body"):
            return _unprocessable(f"Review Can not {event.lower().replace('_', ' ')} without a body")
        if len(str(body.get("body") or "")) > MAX_BODY or any(
                len(str(c.get("body") or "")) > MAX_BODY for c in body.get("comments") or [] if isinstance(c, dict)):
            return _too_long("PullRequestReview")
        if body.get("commit_id", self.heads[number]) != self.heads[number]:
            return _unprocessable("commit_id is not part of the pull request")
        hunks = {f["filename"]: _hunks(f["patch"]) for f in self.files.get(number, []) if "patch" in f}
        for c in body.get("comments") or []:
            if not isinstance(c.get("body"), str) or not isinstance(c.get("line"), int):
                return _unprocessable("Invalid request.\n\nNo subschema in \"anyOf\" matched.")
            if c.get("path") not in hunks:
                return _unprocessable("Path could not be resolved")
            side = c.get("side", "RIGHT")
            if side not in ("LEFT", "RIGHT") or c.get("start_side", side) != side:
                return _unprocessable("Invalid side")
            hunk = next((h for h in hunks[c["path"]][side] if h[0] <= c["line"] <= h[1]), None)
            if hunk is None:
                return _unprocessable("Pull request review thread line must be part of the diff")
            start = c.get("start_line")
            if start is not None and not (hunk[0] <= start < c["line"]):
                return _unprocessable("Pull request review thread start line must be part of the same hunk as "
                                      "the line." if start < c["line"] else "start_line must precede line")
        self._next_id += 1
        review = {"id": self._next_id, "node_id": f"PRR_{self._next_id}", "user": dict(self.writer),
                  "body": body.get("body") or "",
                  "state": {"COMMENT": "COMMENTED", "APPROVE": "APPROVED", "REQUEST_CHANGES": "CHANGES_REQUESTED"}
                  .get(event or "", "PENDING"), "commit_id": self.heads[number],
                  "html_url": f"https://github.com/{self.owner}/{self.repo}/pull/{number}"
                              f"#pullrequestreview-{self._next_id}", "submitted_at": "2026-01-01T00:02:00Z"}
        self.reviews.setdefault(number, []).append({**review, "comments": list(body.get("comments") or [])})
        return 200, review, {}

    def _page(self, path: str, query: dict[str, str], items: list[Any]) -> tuple[int, Any, dict[str, str]]:
        per_page = max(1, min(int(query.get("per_page", 30)), self.max_per_page))
        page = max(1, int(query.get("page", 1)))
        last = max(1, -(-len(items) // per_page))
        links = []

        def link(n: int, rel: str) -> str:
            return f'<{self.url}{path}?per_page={per_page}&page={n}>; rel="{rel}"'

        if page < last:
            links += [link(page + 1, "next"), link(last, "last")]
        if page > 1:
            links += [link(1, "first"), link(page - 1, "prev")]
        headers = {"link": ", ".join(links)} if links else {}
        return 200, items[(page - 1) * per_page: page * per_page], headers


def _hunks(patch: str) -> dict[str, list[tuple[int, int]]]:
    """Each hunk's lines on each side, from its header alone: LEFT a..a+b-1, RIGHT c..c+d-1 (a count of 0: none)."""
    sides: dict[str, list[tuple[int, int]]] = {"LEFT": [], "RIGHT": []}
    for m in re.finditer(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@", patch, re.M):
        for side, start, count in (("LEFT", m[1], m[2]), ("RIGHT", m[3], m[4])):
            n = int(count) if count is not None else 1
            if n:
                sides[side].append((int(start), int(start) + n - 1))
    return sides


def _too_long(resource: str) -> tuple[int, Any, dict[str, str]]:
    return 422, {"message": "Validation Failed", "errors": [
        {"resource": resource, "code": "custom", "field": "body",
         "message": "body is too long (maximum is 65536 characters)"}]}, {}


def _unprocessable(error: str) -> tuple[int, Any, dict[str, str]]:
    return 422, {"message": "Unprocessable Entity", "errors": [error],
                 "documentation_url": "https://docs.github.com/rest/pulls/reviews#create-a-review-for-a-pull-request",
                 "status": "422"}, {}


def _public(comment: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in comment.items() if k != "issue_number"}


def _send(h: BaseHTTPRequestHandler, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
    data = b"" if status == 204 else json.dumps(payload).encode()  # No Content: no body at all
    h.send_response(status)
    h.send_header("content-type", "application/json; charset=utf-8")
    h.send_header("content-length", str(len(data)))
    h.send_header("x-ratelimit-limit", "1000")
    for k, v in (headers or {}).items():
        h.send_header(k, v)
    h.end_headers()
    h.wfile.write(data)
