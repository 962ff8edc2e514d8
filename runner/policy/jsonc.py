"""JSONC reading that keeps positions, so every policy error can say file:line:col.

A fast parser reads JSONC (comments, trailing commas, single quotes, bare keys) and
builds the plain value and a map from JSON path to position in one pass. Anything
else — JSON5-only syntax, and every syntax error, for json-five's wording of it —
goes to json-five, which parses JSON5 (a superset of JSONC) into a model whose nodes
carry line and column; we walk that model once the same way. Nesting deeper than
MAX_DEPTH is an error on either path, never a RecursionError.
"""

from __future__ import annotations

import bisect
import json
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:  # json5 (~25 ms to import) is the fallback parser: loaded only when a file needs it
    from json5.utils import JSON5DecodeError

Path = tuple[str | int, ...]


class PolicyError(Exception):
    """A policy problem located in a file. str() is `file:line:col: message`, or `where: message` when the
    problem has no file (`--approve 'x'`): a made-up position would send people looking for one."""

    def __init__(self, file: str, line: int, col: int, message: str, *, where: str | None = None) -> None:
        super().__init__(f"{where}: {message}" if where else f"{file}:{line}:{col}: {message}")
        self.file, self.line, self.col, self.message = file, line, col, message


@dataclass
class Located:
    value: Any
    # Position of each value, and of each object key (where "unknown key" errors should point): (line, col),
    # 1-based; or, from the fast parser, an offset into `text`, turned into (line, col) when asked for (most
    # positions are never asked for: computing them all cost a 5,000-rule policy a third of its load time).
    values: dict[Path, Any] = field(default_factory=dict)
    keys: dict[Path, Any] = field(default_factory=dict)
    text: str | None = None  # set when the tables hold offsets
    _newlines: list[int] | None = field(default=None, repr=False)

    def position(self, path: Path, *, key: bool = False) -> tuple[int, int]:
        """The nearest known position: the path itself, else its closest ancestor."""
        table = self.keys if key else self.values
        while path:
            if path in table:
                return self._line_col(table[path])
            if path in self.values:
                return self._line_col(self.values[path])
            path = path[:-1]
        return self._line_col(self.values.get((), (1, 1)))

    def _line_col(self, where: Any) -> tuple[int, int]:
        if self.text is None or isinstance(where, tuple):
            return where
        return line_col(self.text, where, self._lines())

    def _lines(self) -> list[int]:
        if self._newlines is None:
            self._newlines = newlines(self.text or "")
        return self._newlines


def newlines(text: str) -> list[int]:
    return [m.start() for m in _NEWLINE.finditer(text)]


def line_col(text: str, offset: int, lines: list[int]) -> tuple[int, int]:
    """1-based (line, col) of `offset`; `lines` are the offsets of the text's newlines (`newlines`)."""
    before = bisect.bisect_left(lines, offset)
    return before + 1, offset - (lines[before - 1] + 1 if before else 0) + 1


_NEWLINE = re.compile("\n")


def _pos(node: Any) -> tuple[int, int]:
    return (getattr(node, "lineno", None) or 1, (getattr(node, "col_offset", None) or 0) + 1)


def _key_name(node: Any) -> str:
    from json5 import model as m

    if isinstance(node, m.Identifier):
        return node.name
    return node.characters


def parse(text: str, file: str) -> Located:
    """Parse JSONC text; raise PolicyError with the position of the first problem."""
    try:
        return _Fast(text, file).parse()
    except _NotFast as stop:
        return parse_json5(text, file, stop)


def parse_json5(text: str, file: str, stop: _NotFast | None = None) -> Located:
    """The json-five path: JSON5, and the messages for syntax errors. `stop`: where the fast
    parser stopped, the position to report if json-five itself cannot cope (deep nesting)."""
    import json5
    from json5.loader import ModelLoader
    from json5.utils import JSON5DecodeError

    try:
        tree = json5.loads(text, loader=ModelLoader())
    except JSON5DecodeError as exc:
        raise _syntax_error(exc, text, file) from None
    except RecursionError:  # nesting deeper than the point the fast parser stopped at
        line, col = (stop.line, stop.col) if stop else (1, 1)
        raise PolicyError(file, line, col, f"invalid JSONC: {stop or 'nested too deeply'}") from None
    located = Located(None)
    located.value = _walk(tree.value, (), located, file)
    return located


def _syntax_error(exc: JSON5DecodeError, text: str, file: str) -> PolicyError:
    lines = [ln.strip() for ln in str(exc.msg).splitlines() if ln.strip()]
    primary = next((ln for ln in lines if not ln.endswith(":") and "multiple errors" not in ln), "syntax error")
    found = _AT.search(primary)
    if found:
        line, col = int(found.group(1)), int(found.group(2))
    else:
        at_index = _AT_INDEX.search(primary)
        index = int(at_index.group(1)) if at_index else (getattr(exc, "index", None) or 0)
        line = text.count("\n", 0, index) + 1
        col = index - (text.rfind("\n", 0, index) + 1) + 1
    message = _AT_INDEX.sub("", _AT.sub("", primary)).rstrip(" .:")
    message = message.replace("in or near token", "near").replace(" at", "").strip()
    return PolicyError(file, line, col, f"invalid JSONC: {message}")


_AT = re.compile(r"\s*at:? line (\d+) column (\d+) \(char \d+\)")
_AT_INDEX = re.compile(r"\s*at index (\d+)")


def _walk(node: Any, path: Path, out: Located, file: str) -> Any:
    from json5 import model as m  # a cached module after the first call

    out.values[path] = _pos(node)
    if isinstance(node, (m.JSONObject, m.JSONArray)) and len(path) >= MAX_DEPTH:
        line, col = _pos(node)
        raise PolicyError(file, line, col, f"invalid JSONC: nested deeper than {MAX_DEPTH} levels")
    if isinstance(node, m.JSONObject):
        obj: dict[str, Any] = {}
        for pair in node.key_value_pairs:
            name = _key_name(pair.key)
            child = (*path, name)
            if name in obj:
                line, col = _pos(pair.key)
                raise PolicyError(file, line, col, f"duplicate key '{name}'")
            out.keys[child] = _pos(pair.key)
            obj[name] = _walk(pair.value, child, out, file)
        return obj
    if isinstance(node, m.JSONArray):
        return [_walk(v, (*path, i), out, file) for i, v in enumerate(node.values)]
    if isinstance(node, (m.DoubleQuotedString, m.SingleQuotedString)):
        return node.characters
    if isinstance(node, m.BooleanLiteral):
        return bool(node.value)
    if isinstance(node, m.NullLiteral):
        return None
    if isinstance(node, (m.Integer, m.Float)):
        return node.value
    if isinstance(node, m.UnaryOp) and isinstance(node.value, (m.Integer, m.Float)):
        return -node.value.value if node.op == "-" else node.value.value
    if isinstance(node, (m.Infinity, m.NaN, m.UnaryOp)):
        line, col = _pos(node)
        raise PolicyError(file, line, col, "Infinity and NaN are not allowed in a policy")
    line, col = _pos(node)
    raise PolicyError(file, line, col, f"unsupported value {type(node).__name__}")


MAX_DEPTH = 64  # a policy nests 4 deep; far deeper is an attack on the parser, not a policy

# One token per match, the whitespace and comments before it skipped by the same match (possessively: no
# backtracking into them), so the Python loop sees only tokens; `end` matches once nothing but them is left.
# `other` catches what the fast path leaves to json-five (JSON5-only syntax such as hex numbers or unquoted
# values, and every syntax error, whose wording json-five gives).
_TOKEN = re.compile(r"""
    (?:[ \t\r\n]+|//[^\n]*|/\*.*?\*/)*+
    (?: (?P<punct>[{}\[\]:,])
      | (?P<string>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
      | (?P<number>(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?(?![0-9A-Za-z_$.]))
      | (?P<sign>[+-])
      | (?P<word>[A-Za-z_$][A-Za-z0-9_$]*(?![^\x00-\x7f]))
      | (?P<end>\Z)
      | (?P<other>.))
""", re.VERBOSE | re.DOTALL)


class _NotFast(Exception):
    """The fast path stops here; json-five parses the file (or says what is wrong with it)."""

    def __init__(self, line: int, col: int, token: str) -> None:
        super().__init__(f"unexpected {token!r}")
        self.line, self.col, self.token = line, col, token


class _Fast:
    """A JSONC parser (JSON with comments, trailing commas, single-quoted strings and bare keys)
    that builds the value and its positions in one pass over a token list: about a hundred times
    faster than json-five's LALR parser, which is what made a 5,000-rule policy slow to load.

    Positions are json-five's: 1-based line and column of the token (a signed number at its sign).
    A duplicate key or NaN/Infinity is reported after the whole file parsed (a syntax error wins),
    as the json-five path does; nesting past MAX_DEPTH is reported at once."""

    def __init__(self, text: str, file: str) -> None:
        self.file = file
        self.text = text
        self.tokens: list[tuple[str, str, int]] = [  # kind, text, offset
            (kind, match.group(kind), match.start(kind)) for match in _TOKEN.finditer(text)
            if (kind := match.lastgroup or "other") != "end"]
        self.i = 0
        self.located = Located(None, text=text)
        self.deferred: PolicyError | None = None

    def _line_col(self, offset: int) -> tuple[int, int]:
        return self.located._line_col(offset)

    def parse(self) -> Located:
        if not self.tokens:
            raise _NotFast(1, 1, "")
        self.located.value = self._value((), 0)
        if self.i != len(self.tokens):
            self._stop()
        if self.deferred is not None:
            raise self.deferred
        return self.located

    def _stop(self) -> NoReturn:
        _, text, at = self.tokens[min(self.i, len(self.tokens) - 1)]
        raise _NotFast(*self._line_col(at), text)

    def _defer(self, at: int, message: str) -> None:
        if self.deferred is None:
            self.deferred = PolicyError(self.file, *self._line_col(at), message)

    def _value(self, path: Path, depth: int) -> Any:
        if self.i >= len(self.tokens):
            self._stop()
        kind, text, at = self.tokens[self.i]
        self.located.values[path] = at
        self.i += 1
        if text == "{" or text == "[":
            if depth >= MAX_DEPTH:
                raise PolicyError(self.file, *self._line_col(at),
                                  f"invalid JSONC: nested deeper than {MAX_DEPTH} levels")
            return self._object(path, depth + 1) if text == "{" else self._array(path, depth + 1)
        if kind == "string":
            return self._string(text, at)
        if kind == "number":
            return float(text) if any(c in text for c in ".eE") else int(text)
        if kind == "word" and text in _WORDS:
            return _WORDS[text]
        if kind == "sign" and self.i < len(self.tokens):
            nkind, ntext, nat = self.tokens[self.i]
            if nat == at + 1 and (nkind == "number" or ntext in ("Infinity", "NaN")):
                self.i += 1
                if nkind == "number":
                    number = float(ntext) if any(c in ntext for c in ".eE") else int(ntext)
                    return -number if text == "-" else number
                text = ntext
        if text in ("Infinity", "NaN"):
            self._defer(at, "Infinity and NaN are not allowed in a policy")
            return None
        raise _NotFast(*self._line_col(at), text)

    def _string(self, text: str, at: int) -> str:
        if "\\" not in text:
            return text[1:-1]
        if text[0] == '"':
            try:
                return json.loads(text, strict=False)
            except ValueError:
                pass
        raise _NotFast(*self._line_col(at), text)  # JSON5-only escapes (`\'`, `\x41`, a line continuation)

    def _object(self, path: Path, depth: int) -> dict[str, Any]:
        obj: dict[str, Any] = {}
        tokens = self.tokens
        while True:
            if self.i >= len(tokens):
                self._stop()
            kind, text, at = tokens[self.i]
            if text == "}":
                self.i += 1
                return obj
            if kind == "string":
                name = self._string(text, at)
            elif kind == "word":
                name = text
            else:
                self._stop()
            self.i += 1
            if self.i >= len(tokens) or tokens[self.i][1] != ":":
                self._stop()
            self.i += 1
            child = (*path, name)
            if name in obj:
                self._defer(at, f"duplicate key '{name}'")
            self.located.keys[child] = at
            obj[name] = self._value(child, depth)
            if self.i < len(tokens) and tokens[self.i][1] == ",":
                self.i += 1
            elif self.i >= len(tokens) or tokens[self.i][1] != "}":
                self._stop()

    def _array(self, path: Path, depth: int) -> list[Any]:
        out: list[Any] = []
        tokens = self.tokens
        while True:
            if self.i >= len(tokens):
                self._stop()
            if tokens[self.i][1] == "]":
                self.i += 1
                return out
            out.append(self._value((*path, len(out)), depth))
            if self.i < len(tokens) and tokens[self.i][1] == ",":
                self.i += 1
            elif self.i >= len(tokens) or tokens[self.i][1] != "]":
                self._stop()


_WORDS = {"true": True, "false": False, "null": None}
