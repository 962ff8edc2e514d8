"""Truncation boundaries: exactly at a limit is whole, one over is cut; whole lines; UTF-8 intact."""

from __future__ import annotations

import pytest

from runner.tools.truncate import Limits, count_lines, render, truncate_head, truncate_tail

DEFAULT = Limits()


def lines(n: int, width: int = 10) -> str:
    return "".join(f"{i:0{width - 1}d}\n" for i in range(n))


@pytest.mark.parametrize("fn", [truncate_head, truncate_tail])
def test_exactly_2000_lines_is_whole(fn):
    t = fn(lines(2000), DEFAULT)
    assert not t.truncated and t.text == lines(2000)


def test_2001_lines_head_keeps_the_first_2000():
    t = truncate_head(lines(2001), DEFAULT)
    assert t.truncated and t.by == "lines" and t.kept_lines == 2000 and t.omitted_lines == 1
    assert t.text == lines(2000)


def test_2001_lines_tail_keeps_the_last_2000():
    t = truncate_tail(lines(2001), DEFAULT)
    assert t.truncated and t.text == lines(2001)[10:] and t.omitted_lines == 1


def test_trailing_newline_is_not_a_line():
    assert count_lines("a\nb\n") == 2 and count_lines("a\nb") == 2 and count_lines("") == 0
    assert not truncate_head("x\n" * 2000, DEFAULT).truncated
    assert truncate_head("x\n" * 2000 + "y", DEFAULT).truncated  # a 2001st line without newline


@pytest.mark.parametrize("fn", [truncate_head, truncate_tail])
def test_exactly_51200_bytes_is_whole_and_one_more_is_cut(fn):
    text = ("a" * 99 + "\n") * 512  # 51,200 bytes in 512 lines
    assert not fn(text, DEFAULT).truncated
    t = fn(text + "b", DEFAULT)
    assert t.truncated and t.by == "bytes" and t.kept_bytes <= 51200
    assert t.text.endswith("\n") if fn is truncate_head else t.text.startswith("a")


def test_whole_lines_only():
    text = "aaaa\nbbbb\ncccc\n"
    t = truncate_head(text, Limits(100, 12))
    assert t.text == "aaaa\nbbbb\n" and t.omitted_bytes == 5
    t = truncate_tail(text, Limits(100, 12))
    assert t.text == "bbbb\ncccc\n"


@pytest.mark.parametrize("fn", [truncate_head, truncate_tail])
def test_single_overlong_line_is_cut_inside_at_a_character_boundary(fn):
    text = "é" * 40_000  # 80,000 bytes, one line
    t = fn(text, DEFAULT)
    assert t.truncated and t.by == "bytes"
    assert t.kept_bytes in (51200, 51199) and set(t.text) == {"é"}
    t.text.encode("utf-8").decode("utf-8")  # valid UTF-8


@pytest.mark.parametrize("fn", [truncate_head, truncate_tail])
def test_multibyte_characters_at_the_cut(fn):
    text = "€\n" * 20_000  # 4 bytes per line
    t = fn(text, Limits(100_000, 10))
    assert t.text == "€\n€\n" and t.kept_bytes == 8


def test_render_head_and_tail_formats():
    t = truncate_head(lines(5), Limits(2, 10_000))
    out = render(t, "/r/outputs/tool_x", from_end=False)
    assert out == f"{lines(2).rstrip()}\n\n...3 lines truncated...\n\n" + \
        "Full output: /r/outputs/tool_x — use grep on it, or read it with offset/limit, rather than printing it again."
    t = truncate_tail(lines(5), Limits(2, 10_000))
    out = render(t, "/p", from_end=True)
    assert out.startswith("...3 lines truncated...\nFull output: /p") and out.endswith(lines(5)[-20:])


def test_render_of_whole_text_is_the_text():
    t = truncate_head("short\n", DEFAULT)
    assert render(t, None, from_end=False) == "short\n"


def test_limits_from_policy():
    assert Limits.from_policy({"maxLines": 5, "maxBytes": 100, "ttlDays": 1}) == Limits(5, 100, 1.0)
    assert Limits.from_policy({}) == Limits(2000, 51200, 7.0)
