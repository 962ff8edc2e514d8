"""JSONC parsing: values come back plain, and every problem points at file:line:col."""

from __future__ import annotations

import pytest

from runner.policy.jsonc import PolicyError, parse

TEXT = """// leading comment
{
  /* block */ "a": /* inline */ "v", // trailing
  b: 'single',
  "list": [1, -2, 3.5,],
  "nested": { "t": true, "n": null },
}
"""


def test_parse_returns_plain_values():
    assert parse(TEXT, "p.jsonc").value == {
        "a": "v", "b": "single", "list": [1, -2, 3.5], "nested": {"t": True, "n": None},
    }


def test_parse_keeps_value_positions():
    located = parse(TEXT, "p.jsonc")
    assert located.position(()) == (2, 1)
    # Comments before a key or value shift the column; the position is the token's own.
    assert located.position(("a",)) == (3, 33)
    assert located.position(("b",)) == (4, 6)
    assert located.position(("list", 0)) == (5, 12)
    # A negative number is located at its sign.
    assert located.position(("list", 1)) == (5, 15)
    assert located.position(("nested", "n")) == (6, 31)


def test_parse_keeps_key_positions():
    located = parse(TEXT, "p.jsonc")
    assert located.position(("a",), key=True) == (3, 15)
    assert located.position(("b",), key=True) == (4, 3)
    assert located.position(("nested", "t"), key=True) == (6, 15)


def test_position_falls_back_to_nearest_ancestor():
    located = parse(TEXT, "p.jsonc")
    assert located.position(("nested", "missing")) == (6, 13)
    assert located.position(("nowhere", 3, "x")) == (2, 1)
    # A key lookup for a path with no key entry falls back to the value position.
    assert located.position(("list", 0), key=True) == (5, 12)


@pytest.mark.parametrize(
    ("text", "line", "col", "fragment"),
    [
        # Missing comma: the error is at the token that should have been preceded by one.
        ('{\n  "a": 1\n  "b": 2\n}\n', 3, 3, "COMMA"),
        ('{\n  "a": 1,\n', 3, 1, "EOF"),
        ('{}\n}', 2, 1, "Syntax Error"),
        ('[1,\n 2 3]', 2, 4, "Syntax Error"),
        ('{\n  "a": tru\n}', 2, 8, "Syntax Error"),
        ('{\n  "a": 1,\n  "b": "x\n}', 3, 8, "UNTERMINATED"),
        ("", 1, 1, "EOF"),
    ],
    ids=["missing-comma", "unclosed", "extra-brace", "missing-array-comma", "bare-word", "unterminated", "empty"],
)
def test_syntax_errors_are_located(text, line, col, fragment):
    with pytest.raises(PolicyError) as info:
        parse(text, "bad.jsonc")
    err = info.value
    assert (err.file, err.line, err.col) == ("bad.jsonc", line, col)
    assert fragment in err.message
    assert str(err).startswith(f"bad.jsonc:{line}:{col}: invalid JSONC: ")


def test_illegal_character_is_located():
    with pytest.raises(PolicyError) as info:
        parse('{\n  "a": @\n}', "bad.jsonc")
    assert (info.value.line, info.value.col) == (2, 8)


def test_duplicate_key_points_at_second_key():
    with pytest.raises(PolicyError) as info:
        parse('{\n  "a": 1,\n  "b": {\n    "a": 2,\n    "a": 3\n  }\n}', "dup.jsonc")
    # Same key at different levels is fine; only the inner repeat is an error.
    assert (info.value.line, info.value.col) == (5, 5)
    assert info.value.message == "duplicate key 'a'"


def test_duplicate_key_across_quote_styles():
    # `a`, "a" and 'a' name the same key in JSON5.
    with pytest.raises(PolicyError) as info:
        parse("{a: 1, 'a': 2}", "dup.jsonc")
    assert (info.value.line, info.value.col) == (1, 8)


@pytest.mark.parametrize(
    ("text", "line", "col"),
    [
        ('{\n  "x": NaN\n}', 2, 8),
        ('{\n  "x":   -Infinity\n}', 2, 10),
        ('{"x": +Infinity}', 1, 7),
        ('{"x": [1,\n\tInfinity]}', 2, 2),
        ("{\"x\": -NaN}", 1, 7),
    ],
)
def test_nan_and_infinity_are_rejected(text, line, col):
    with pytest.raises(PolicyError) as info:
        parse(text, "n.jsonc")
    assert (info.value.line, info.value.col) == (line, col)
    assert "Infinity and NaN are not allowed" in info.value.message


def test_signed_numbers_are_values():
    assert parse('{"a": -3, "b": +2, "c": -0.5}', "s.jsonc").value == {"a": -3, "b": 2, "c": -0.5}


# --- the fast path and json-five agree; nesting is bounded -----------------------------------


def _same(text: str) -> None:
    from runner.policy.jsonc import _Fast, parse_json5

    fast, slow = _Fast(text, "p.jsonc").parse(), parse_json5(text, "p.jsonc")
    assert fast.value == slow.value
    assert (set(fast.values), set(fast.keys)) == (set(slow.values), set(slow.keys))
    # The fast path keeps offsets and turns them into (line, col) when asked: the same positions.
    assert {p: fast.position(p) for p in fast.values} == {p: slow.position(p) for p in slow.values}
    assert {p: fast.position(p, key=True) for p in fast.keys} == {p: slow.position(p, key=True) for p in slow.keys}


def test_fast_path_matches_json5_on_the_shipped_policies():
    from runner.policy.load import shipped_dir

    for path in sorted(shipped_dir().glob("*.jsonc")):
        _same(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("text", [
    TEXT,
    '{"a": [1e5, 1.0, -0, 1E-2, 10, "\\u00e9\\t\\/", "tab\there", +3], "b": {}, "c": [], "d": [[]]}',
    '/* only */ {"rules": [{"pattern": "regex:a\\\\.b", "x": null, "y": false}],}\n// end',
    '{\n\t"k": "v",\r\n  \'q\': \'w\', $id: 1, _x: 2}',
    '[1, 2,]',
])
def test_fast_path_matches_json5(text):
    _same(text)


@pytest.mark.parametrize("text", ["{a: 0x10}", "{a: .5}", "{a: 'it\\'s'}", '{"a": "line\\\nnext"}', "{é: 1}"])
def test_json5_only_syntax_still_parses(text):
    from runner.policy.jsonc import parse_json5

    assert parse(text, "p.json5").value == parse_json5(text, "p.json5").value


@pytest.mark.parametrize(("text", "line", "col"), [
    ('{"a":' * 5000 + "1" + "}" * 5000, 1, 5 * 64 + 1),
    ("[" * 5000 + "]" * 5000, 1, 65),
    ('{"permission": ' + '{"a":' * 5000, 1, 15 + 5 * 63 + 1),
    ("{\n" + '"a": {' * 100 + "\n", 2, 6 * 64),
    # JSON5-only syntax first sends the file down the json-five path, which must stop at the same depth.
    ("{a: 0x1, b:" + "[" * 70 + "]" * 70 + "}", 1, 11 + 64),
    # A syntax error before the depth is exceeded: json-five recurses too deep; still a located error.
    ("{a: tru, b:" + "[" * 5000 + "]" * 5000 + "}", 1, 5),
])
def test_deep_nesting_is_a_located_error(text, line, col):
    with pytest.raises(PolicyError) as info:
        parse(text, "deep.jsonc")
    assert (info.value.line, info.value.col) == (line, col)
    assert info.value.message.startswith("invalid JSONC: ")


def test_sixty_four_levels_are_fine():
    assert len(parse("[" * 64 + "]" * 64, "p.jsonc").values) == 64
