"""`fit` (runner/report/markdown.py): every body agent-run posts to GitHub cut to its 65,536 characters (issue 41,
item 9) — a pure function, tested as one."""

from __future__ import annotations

import pytest

from runner.report.markdown import GITHUB_BODY_CHARS, fenced, fit, open_fence


def test_a_body_that_fits_is_unchanged():
    text = "x" * GITHUB_BODY_CHARS
    assert fit(text, "anywhere") is text


@pytest.mark.parametrize("limit", [60, 200, 1_000, 3_000, 4_000])
def test_a_cut_inside_a_fenced_block_closes_it_and_says_where_the_whole_text_is(limit):
    answer = "line\n" * 300 + "```\nnot a fence to ours\n" + "y" * 3_000
    text = "<!-- marker -->\n\n" + fenced(answer, "text") + "\n\nafter\n"
    out = fit(text, "the run's artifact", limit)
    assert len(out) <= limit and open_fence(out) is None
    assert out.endswith(f" of its {len(text):,} characters: the run's artifact)*\n")


def test_the_cut_falls_on_a_character_boundary():
    text = "e\u0301" * 5_000 + "\U0001F469\u200d\U0001F4BB" * 5_000  # e + a combining acute; a ZWJ sequence
    for limit in [*range(100, 110), *range(10_100, 10_110)]:
        out = fit(text, "w", limit)
        head = out.split("\n\n*(cut at")[0]
        assert len(out) <= limit and text.startswith(head)
        assert text[len(head)] not in "\u0301\u200d" and not head.endswith("\u200d")


def test_a_fence_of_tildes_and_an_info_string_with_a_backtick_are_read_as_commonmark_reads_them():
    assert open_fence("~~~~python\ncode\n~~~") == "~~~~"  # a shorter fence does not close it
    assert open_fence("``` not`a fence\n") is None  # a backtick fence's info string has no backtick
    assert open_fence("    ```\n") is None  # four spaces in: indented code, not a fence
