"""JSONC reading that keeps positions, so every policy error can say file:line:col.

json-five parses JSON5 (a superset of JSONC: comments, trailing commas) into a
model whose nodes carry line and column. We walk that model once to build the
plain value and a map from JSON path to position.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import json5
from json5 import model as m
from json5.loader import ModelLoader
from json5.utils import JSON5DecodeError

Path = tuple[str | int, ...]


class PolicyError(Exception):
    """A policy problem located in a file. str() is `file:line:col: message`."""

    def __init__(self, file: str, line: int, col: int, message: str) -> None:
        super().__init__(f"{file}:{line}:{col}: {message}")
        self.file, self.line, self.col, self.message = file, line, col, message


@dataclass
class Located:
    value: Any
    # Position (line, col), 1-based, of each value; and of each object key,
    # which is where "unknown key" errors should point.
    values: dict[Path, tuple[int, int]] = field(default_factory=dict)
    keys: dict[Path, tuple[int, int]] = field(default_factory=dict)

    def position(self, path: Path, *, key: bool = False) -> tuple[int, int]:
        """The nearest known position: the path itself, else its closest ancestor."""
        table = self.keys if key else self.values
        while path:
            if path in table:
                return table[path]
            if path in self.values:
                return self.values[path]
            path = path[:-1]
        return self.values.get((), (1, 1))


def _pos(node: Any) -> tuple[int, int]:
    return (getattr(node, "lineno", None) or 1, (getattr(node, "col_offset", None) or 0) + 1)


def _key_name(node: Any) -> str:
    if isinstance(node, m.Identifier):
        return node.name
    return node.characters


def parse(text: str, file: str) -> Located:
    """Parse JSONC text; raise PolicyError with the position of the first problem."""
    try:
        tree = json5.loads(text, loader=ModelLoader())
    except JSON5DecodeError as exc:
        raise _syntax_error(exc, text, file) from None
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
    out.values[path] = _pos(node)
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

