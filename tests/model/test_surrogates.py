"""runner/model/surrogates.py: halves of UTF-16 pairs mended, as pure functions."""

from __future__ import annotations

import pytest

from runner.model.surrogates import Mend, StreamHalves, mend

HIGH, LOW = "\ud83d", "\ude00"


@pytest.mark.parametrize(("text", "whole"), [
    ("plain", "plain"),
    (f"a{HIGH}b", "a\ufffdb"),
    (f"a{HIGH}", "a\ufffd"),
    (f"{LOW}x", "\ufffdx"),
    (f"a{HIGH}{LOW}b", "a😀b"),
    (f"{HIGH}{HIGH}{LOW}", "\ufffd😀"),
    (f"{LOW}{HIGH}", "\ufffd\ufffd"),
])
def test_mend(text, whole):
    assert mend(text) == whole


def test_mend_counts_only_what_it_replaced():
    m = Mend()
    assert m.text(f"already \ufffd, {HIGH} and {HIGH}{LOW}") == "already \ufffd, \ufffd and 😀"
    assert m.replaced == 1


@pytest.mark.parametrize(("text", "whole", "replaced"), [
    ('{"c": "x\\ud83dy"}', '{"c": "x\\ufffdy"}', 1),
    ('{"c": "\\ud83d\\ude00"}', '{"c": "\\ud83d\\ude00"}', 0),  # a pair, escaped: whole
    ('{"c": "\\\\ud83d"}', '{"c": "\\\\ud83d"}', 0),  # an escaped backslash, then text: no escape at all
    ('{"c": "\\\\\\ud83d"}', '{"c": "\\\\\\ufffd"}', 1),  # an escaped backslash, then a half
    ('{"c": "\\ude00\\ud83d", "n": "\\n\\u0041"}', '{"c": "\\ufffd\\ufffd", "n": "\\n\\u0041"}', 2),
    (f'{{"c": "{HIGH}"}}', '{"c": "\ufffd"}', 1),  # a half in the text itself
])
def test_a_half_escaped_in_json_text(text, whole, replaced):
    m = Mend()
    assert m.json_text(text) == whole
    assert m.replaced == replaced


@pytest.mark.parametrize("pieces", [
    ["ab", HIGH, LOW + "cd"],
    ["ab" + HIGH, LOW + "cd" + HIGH, "xy"],
    [HIGH, HIGH, LOW, LOW],
    ["a" + HIGH],
])
def test_stream_pieces_join_to_the_whole_text_mended(pieces):
    halves = StreamHalves()
    shown = [halves.feed(p) for p in pieces] + [halves.end()]
    assert "".join(shown) == mend("".join(pieces))
    assert all(not any("\ud800" <= ch <= "\udfff" for ch in s) for s in shown)
