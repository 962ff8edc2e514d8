"""Webhook payloads shaped like GitHub's documented ones (docs.github.com/webhooks/webhook-events-and-payloads),
cut to the fields agent-run reads plus the ones around them a real payload always has."""

from __future__ import annotations

from typing import Any

OWNER, REPO = "octo", "hello"


def _user(login: str, kind: str = "User") -> dict[str, Any]:
    return {"login": login, "id": abs(hash(login)) % 10**8, "type": kind, "site_admin": False,
            "html_url": f"https://github.com/{login}"}


def repository() -> dict[str, Any]:
    return {"id": 1296269, "name": REPO, "full_name": f"{OWNER}/{REPO}", "private": False, "fork": False,
            "owner": _user(OWNER, "Organization"), "html_url": f"https://github.com/{OWNER}/{REPO}",
            "default_branch": "main"}


def issue(number: int = 5, title: str = "The build fails on Python 3.13", body: str = "It fails with an "
          "ImportError.", login: str = "reporter", pr: bool = False) -> dict[str, Any]:
    data = {"id": 1000 + number, "number": number, "title": title, "body": body, "state": "open",
            "user": _user(login), "labels": [], "comments": 0, "author_association": "NONE",
            "html_url": f"https://github.com/{OWNER}/{REPO}/issues/{number}"}
    if pr:
        data["pull_request"] = {"url": f"https://api.github.com/repos/{OWNER}/{REPO}/pulls/{number}",
                                "html_url": f"https://github.com/{OWNER}/{REPO}/pull/{number}"}
    return data


def issue_comment(body: str, login: str = "alice", *, action: str = "created", comment_id: int = 90001,
                  number: int = 5, kind: str = "User", pr: bool = False) -> dict[str, Any]:
    return {"action": action, "issue": issue(number, pr=pr), "repository": repository(), "sender": _user(login, kind),
            "comment": {"id": comment_id, "node_id": f"IC_{comment_id}", "body": body, "user": _user(login, kind),
                        "author_association": "MEMBER", "created_at": "2026-01-01T00:00:00Z",
                        "html_url": f"https://github.com/{OWNER}/{REPO}/issues/{number}#issuecomment-{comment_id}"}}


def pull_request(action: str = "opened", login: str = "alice", *, number: int = 7, body: str = "Adds a retry.",
                 head_repo: str = f"{OWNER}/{REPO}") -> dict[str, Any]:
    base = repository()
    head = dict(base, full_name=head_repo, fork=head_repo != base["full_name"])
    return {"action": action, "number": number, "repository": base, "sender": _user(login),
            "pull_request": {"id": 2000 + number, "number": number, "title": "Retry the download", "body": body,
                             "state": "open", "draft": False, "user": _user(login),
                             "head": {"ref": "retry", "sha": "a" * 40, "repo": head},
                             "base": {"ref": "main", "sha": "b" * 40, "repo": base}}}


def review_comment(body: str, login: str = "alice", *, comment_id: int = 70001, number: int = 7) -> dict[str, Any]:
    data = pull_request(login=login, number=number)
    return {"action": "created", "repository": data["repository"], "sender": data["sender"],
            "pull_request": data["pull_request"],
            "comment": {"id": comment_id, "body": body, "user": _user(login), "path": "src/fetch.py", "line": 12,
                        "diff_hunk": "@@ -10,3 +10,4 @@ def fetch(url):\n+    retries = 3"}}


def issues(action: str = "opened", login: str = "reporter", *, number: int = 5,
           body: str = "It fails with an ImportError.") -> dict[str, Any]:
    return {"action": action, "issue": issue(number, body=body, login=login), "repository": repository(),
            "sender": _user(login)}


def review(login: str = "alice", *, number: int = 7, body: str = "Please also retry on 503.") -> dict[str, Any]:
    data = pull_request(login="alice", number=number)
    return {"action": "submitted", "repository": data["repository"], "sender": _user(login),
            "pull_request": data["pull_request"],
            "review": {"id": 80001, "body": body, "user": _user(login), "state": "commented",
                       "commit_id": "a" * 40}}


def discussion_comment(body: str, login: str = "alice", *, sender: str | None = None) -> dict[str, Any]:
    """A comment on a discussion; `sender` (who acted: an edit by someone else) defaults to its author."""
    return {"action": "created", "repository": repository(), "sender": _user(sender or login),
            "discussion": {"id": 3001, "number": 9, "title": "How do I retry?", "body": "Asking.",
                           "user": _user("asker")},
            "comment": {"id": 60001, "body": body, "user": _user(login)}}
