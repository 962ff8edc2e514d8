"""GitHub Actions expressions (`${{ … }}`), the part the project's workflows and action.yml use: literals, context
paths (`steps.agent.outputs.run-dir`, `github.event.issue.number`, `x['y']`), `!`, `==`/`!=`/`<`/`>`/`<=`/`>=`
(strings compared case-insensitively, as GitHub does), `&&`/`||` returning an operand, and the functions
`always()`, `success()`, `failure()`, `cancelled()`, `contains`, `startsWith`, `endsWith`, `format`, `join`,
`toJSON`, `fromJSON`. Anything else raises `Unsupported`: a test then knows it is not running what GitHub would.
(docs.github.com/actions/reference/workflows-and-actions/expressions)
"""

from __future__ import annotations

import json
import operator
import re
from collections.abc import Callable, Mapping
from typing import Any

TOKEN = re.compile(r"\s*(?:(?P<str>'(?:[^']|'')*')|(?P<num>-?\d+(?:\.\d+)?)|(?P<op>==|!=|<=|>=|&&|\|\||[!<>()\[\],.*])"
                   r"|(?P<id>[A-Za-z_][A-Za-z0-9_-]*))")
EMBEDDED = re.compile(r"\$\{\{(.*?)\}\}", re.S)


class Unsupported(ValueError):
    pass


def truthy(v: Any) -> bool:
    return v not in (None, False, 0, "") and v == v  # NaN is falsy too


def text(v: Any) -> str:
    """A value as GitHub puts it into a string: null is empty, booleans lower case, objects as JSON."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    if isinstance(v, (dict, list)):
        return json.dumps(v, indent=2)
    return str(v)


def _number(v: Any) -> float:
    if v in (None, ""):
        return 0.0
    try:
        return float(v)
    except (TypeError, ValueError):
        return float("nan")


def _loose(a: Any, b: Any) -> tuple[Any, Any]:
    if isinstance(a, str) and isinstance(b, str):
        return a.casefold(), b.casefold()
    if isinstance(a, (int, float)) != isinstance(b, (int, float)):  # a number against anything else: as numbers
        return _number(a), _number(b)
    return a, b


COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "==": operator.eq, "!=": operator.ne, "<": operator.lt, ">": operator.gt, "<=": operator.le, ">=": operator.ge}


class Parser:
    def __init__(self, source: str, context: Mapping[str, Any], status: Callable[[str], bool]) -> None:
        self.tokens = self._lex(source)
        self.i = 0
        self.context = context
        self.status = status

    @staticmethod
    def _lex(source: str) -> list[tuple[str, str]]:
        out, at = [], 0
        while at < len(source.rstrip()):
            m = TOKEN.match(source, at)
            if m is None or m.end() == at:
                raise Unsupported(f"cannot read {source[at:]!r}")
            kind = next(k for k, v in m.groupdict().items() if v is not None)
            out.append((kind, m[kind]))
            at = m.end()
        return out

    def peek(self) -> str | None:
        return self.tokens[self.i][1] if self.i < len(self.tokens) else None

    def take(self, expected: str | None = None) -> tuple[str, str]:
        if self.i >= len(self.tokens) or (expected is not None and self.tokens[self.i][1] != expected):
            raise Unsupported(f"expected {expected!r} at token {self.i}")
        self.i += 1
        return self.tokens[self.i - 1]

    def parse(self) -> Any:
        value = self.or_()
        if self.i != len(self.tokens):
            raise Unsupported(f"unexpected {self.peek()!r}")
        return value

    def or_(self) -> Any:
        value = self.and_()
        while self.peek() == "||":
            self.take()
            right = self.and_()
            value = value if truthy(value) else right
        return value

    def and_(self) -> Any:
        value = self.compare()
        while self.peek() == "&&":
            self.take()
            right = self.compare()
            value = right if truthy(value) else value
        return value

    def compare(self) -> Any:
        value = self.unary()
        while self.peek() in ("==", "!=", "<", ">", "<=", ">="):
            op = self.take()[1]
            value = COMPARE[op](*_loose(value, self.unary()))
        return value

    def unary(self) -> Any:
        if self.peek() == "!":
            self.take()
            return not truthy(self.unary())
        return self.postfix()

    def postfix(self) -> Any:
        value = self.primary()
        while self.peek() in (".", "["):
            if self.take()[1] == ".":
                name = self.take()[1]
                value = value.get(name) if isinstance(value, Mapping) else None
            else:
                key = self.or_()
                self.take("]")
                value = (value.get(str(key)) if isinstance(value, Mapping) else
                         value[int(key)] if isinstance(value, list) and 0 <= int(key) < len(value) else None)
        return value

    def primary(self) -> Any:
        kind, tok = self.take()
        if kind == "str":
            return tok[1:-1].replace("''", "'")
        if kind == "num":
            return float(tok) if "." in tok else int(tok)
        if tok == "(":
            value = self.or_()
            self.take(")")
            return value
        if kind != "id":
            raise Unsupported(f"unexpected {tok!r}")
        if tok in ("true", "false", "null"):
            return {"true": True, "false": False, "null": None}[tok]
        if self.peek() == "(":
            return self.call(tok)
        return self.context.get(tok)

    def call(self, name: str) -> Any:
        self.take("(")
        args: list[Any] = []
        while self.peek() != ")":
            args.append(self.or_())
            if self.peek() == ",":
                self.take()
        self.take(")")
        if name in ("always", "success", "failure", "cancelled"):
            return self.status(name)
        fn = FUNCTIONS.get(name.casefold())
        if fn is None:
            raise Unsupported(f"function {name}()")
        return fn(*args)


def _contains(hay: Any, needle: Any) -> bool:
    if isinstance(hay, list):
        return any(_loose(x, needle)[0] == _loose(x, needle)[1] for x in hay)
    return text(needle).casefold() in text(hay).casefold()


def _format(template: str, *args: Any) -> str:
    return re.sub(r"\{(\d+)\}", lambda m: text(args[int(m[1])]), template.replace("{{", "\0").replace("}}", "\1")) \
        .replace("\0", "{").replace("\1", "}")


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "contains": _contains,
    "startswith": lambda a, b: text(a).casefold().startswith(text(b).casefold()),
    "endswith": lambda a, b: text(a).casefold().endswith(text(b).casefold()),
    "format": _format,
    "join": lambda a, sep=",": text(sep).join(text(x) for x in a) if isinstance(a, list) else text(a),
    "tojson": lambda v: json.dumps(v, indent=2),
    "fromjson": lambda s: json.loads(s),
}


def evaluate(source: str, context: Mapping[str, Any], status: Callable[[str], bool] = lambda s: s != "failure"
             and s != "cancelled") -> Any:
    """The value of one expression (no `${{ }}` around it)."""
    return Parser(source, context, status).parse()


def interpolate(value: Any, context: Mapping[str, Any], status: Callable[[str], bool] | None = None) -> Any:
    """A workflow value with every `${{ expr }}` in it replaced: a string that is one expression keeps its value's
    type (for `if:` and `with:` booleans); strings with text around expressions become strings; other values as
    they are."""
    if not isinstance(value, str) or "${{" not in value:
        return value
    kw = {"status": status} if status else {}
    whole = EMBEDDED.fullmatch(value.strip())
    if whole:
        return evaluate(whole[1], context, **kw)
    return EMBEDDED.sub(lambda m: text(evaluate(m[1], context, **kw)), value)
