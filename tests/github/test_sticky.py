"""Finding the sticky comment again (runner/github/sticky.py)."""

from __future__ import annotations

from runner.github.event import marker
from runner.github.sticky import final_body, find_sticky

BOT = "github-actions[bot]"


def test_only_our_comment_that_starts_with_the_marker_is_the_sticky_one():
    mine = marker("issue-6")
    # An earlier answer of ours whose (model-written) text quotes the marker of a trigger still to come.
    quoting = final_body(marker("issue-comment-1"), {"status": "success", "exit_code": 0, "answer": f"see {mine}"},
                         "https://github.example/o/r/actions/runs/1")
    comments = [{"id": 1, "user": {"login": BOT}, "body": quoting},
                {"id": 2, "user": {"login": "mallory"}, "body": f"{mine}\nfake"},
                {"id": 3, "user": {"login": BOT}, "body": f"{mine}\n⏳ working"}]
    assert find_sticky(comments, mine, BOT) == 3
    assert find_sticky(comments[:2], mine, BOT) is None
    assert find_sticky(comments, marker("issue-comment-1"), BOT) == 1
