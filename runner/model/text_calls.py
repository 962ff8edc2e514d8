"""Tool calls a model wrote as text instead of in `tool_calls`: found, or judged unusable.

Small local models often write the call in their reply's text: Hermes/Qwen `<tool_call>{…}</tool_call>`,
a fenced JSON object with `name` and `arguments`, a bare JSON object that is the whole reply, or
llama-cpp-python's `chatml-function-calling` form `functions.<tool>:` (followed by the arguments, or by
nothing at all: that format's text reply cannot carry them). A call is run only when it is the one call in
the text and nothing but whitespace follows it: a call quoted mid-answer (from a file, say) is part of an
answer and is never run.

`--text-tool-calls auto` (TextCalls) reads text only for a model that needs it, and narrowly: never once the run has
received a structured `tool_calls` reply, only the forms small models write for a call (a fenced block only when
it is the whole reply), and never a call a tool message showed the model (Heard): an answer that quotes a
file's call is an answer. `on` reads every form (a server that only writes calls as text).

Pure functions over the reply's text; the loop decides what to do with the verdict.
"""

from __future__ import annotations

import bisect
import itertools
import json
import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from runner.core.jsonutil import canonical, nested_over


@dataclass(frozen=True)
class TextCall:
    """The one call the text makes: run it (`arguments` is a JSON object's text)."""

    name: str
    arguments: str


@dataclass(frozen=True)
class Unusable:
    """Call-shaped text that cannot be run: the model is told (`what` says why), and it is no answer."""

    what: str


@dataclass(frozen=True)
class _Span:
    end: int  # where the call-shaped text ends; only whitespace may follow for it to count
    calls: list[tuple[str, Any]]  # (name, arguments as written: an object, a JSON string, None: none given)
    broken: str | None = None  # why it is call-shaped but does not parse
    shown: tuple[str, ...] = ()  # the call as written and as canonical JSON: a tool message that holds either showed it


# The tag Hermes/Qwen models write (and its variants); a reply cut off before the closing tag still counts.
_TAGGED = re.compile(r"<(tool_call|function_call|tools?)>(.*?)(?:</\1>|\Z)", re.S)
_FENCED = re.compile(r"(?:^|\n)[ \t]*```[\w-]*[ \t]*\n(.*?)\n?[ \t]*```", re.S)
_FUNCTIONS = re.compile(r"(?:^|\n)[ \t]*functions\.([\w.-]+):", re.S)
_NAMED = re.compile(r'"name"\s*:\s*"([^"]+)"')
_ARGUMENT_KEYS = ("arguments", "parameters")


def parse_text_call(content: str | None, tools: Iterable[str], *, narrow: bool = False,
                    heard: Heard | None = None) -> TextCall | Unusable | None:
    """What a reply without `tool_calls` is: one call to run, call-shaped text that cannot be run, or
    (None) an answer. Only JSON naming a tool of this run counts as a call outside a `<tool_call>` tag or
    the `functions.` form: any other JSON is an answer (a task may ask for JSON; `--output-schema` does).
    `narrow` (auto): a fenced block is a call only when it is the whole reply; `heard`: a call any tool message of
    the conversation showed the model (as written, or as canonical JSON) is an answer that quotes it."""
    text = content or ""
    names = set(tools)
    spans = [*_tagged(text), *_functions(text)]
    taken = [(m.start(), m.end()) for m in _TAGGED.finditer(text)]
    spans += _fenced(text, names, taken, whole=narrow)
    if not spans:
        spans = _bare(text, names)
    if not spans:
        return None
    if text[max(s.end for s in spans):].strip():
        return None  # text after the last call: an answer that quotes one
    if heard is not None and any(heard.showed(shown) for s in spans for shown in s.shown):
        return None  # a tool's output held it: the model quotes a file (or a page), it does not call
    broken = next((s.broken for s in spans if s.broken), None)
    if broken is not None:
        return Unusable(broken)
    calls = [c for s in spans for c in s.calls]
    if len(calls) > 1:
        return Unusable(f"{len(calls)} tool calls written as text ({', '.join(n for n, _ in calls)}); none was run")
    name, arguments = calls[0]
    if name not in names:
        return Unusable(f"a call of `{name}` written as text, and this run has no tool of that name")
    args = _arguments(arguments)
    if args is None:
        return Unusable(f"a call of `{name}` written as text whose arguments are not a JSON object")
    return TextCall(name, args)


# Where a JSON call may start inside prose: an object whose first key names a call.
_CALL_START = re.compile(r'\{\s*"(?:name|function|tool_calls)"\s*:')
_QUOTED_LOOKS = 20  # candidate starts tried per reply: a reply of many braces costs no more than this
_PY_LITERAL = re.compile(r'"(?:[^"\\]|\\.)*"|\b(True|False|None)\b')  # a JSON string is skipped whole


def _json_literal(match: re.Match[str]) -> str:
    return {"True": "true", "False": "false", "None": "null"}.get(match.group(1) or "", match.group(0))


def quoted_call(content: str | None, tools: Iterable[str], heard: Heard) -> tuple[str, dict[str, Any]] | None:
    """The first call of a tool of this run that the reply writes as JSON amid other text — in a fence, a tag or
    inline, with prose before or after it — as (name, arguments); None when there is none, and None whenever any
    call-shaped JSON in the reply is one a tool message showed the model (`heard`: the model quotes a file or a
    page; nothing of it may be offered back as a call). parse_text_call never runs a call with text around it; the
    answer rules (runner/guards/answers.py `quoted_call`) tell the model how to make its own call run."""
    text = content or ""
    names = set(tools)
    decoder = json.JSONDecoder()
    found: tuple[str, dict[str, Any]] | None = None
    lenient: str | None = None
    for match in itertools.islice(_CALL_START.finditer(text), _QUOTED_LOOKS):
        try:
            value, end = decoder.raw_decode(text, match.start())
        except (ValueError, RecursionError):
            # Python's True/False/None where JSON has true/false/null (small models write them): the same length, so
            # the same offsets; the call shown back is then JSON.
            lenient = _PY_LITERAL.sub(_json_literal, text) if lenient is None else lenient
            try:
                value, end = decoder.raw_decode(lenient, match.start())
            except (ValueError, RecursionError):
                continue
        if nested_over(value):
            continue
        if heard.showed(text[match.start():end]) or heard.showed(canonical(value)):
            return None
        for name, arguments in _calls(value):
            args = _arguments(arguments)
            if found is None and name in names and args is not None:
                found = name, arguments if isinstance(arguments, dict) else json.loads(args)  # the model's order
    return found


Mode = Literal["auto", "on", "off"]


@dataclass(frozen=True)
class TextCalls:
    """How an agent reads the calls its model writes as text (--text-tool-calls): `on`, every form; `off`, none;
    `auto`, narrowly (parse_text_call) and only until `structured` is set. `structured` is the run's, shared by
    every agent of it (a child's is its parent's): set at the first reply any of them receives with `tool_calls`
    (a continued run's, from its record), from whichever thread."""

    mode: Mode = "auto"
    structured: threading.Event = field(default_factory=threading.Event)

    @property
    def listening(self) -> bool:
        """Whether a reply's text may still be read as a call with what tool messages showed checked (auto)."""
        return self.mode == "auto" and not self.structured.is_set()

    def read(self, message: dict[str, Any], tools: Iterable[str], heard: Heard) -> TextCall | Unusable | None:
        """The reply as received: noted when it has `tool_calls` (then None), else its text read for a call."""
        if message.get("tool_calls"):
            self.structured.set()
            return None
        if self.mode == "off" or (self.mode == "auto" and self.structured.is_set()):
            return None
        auto = self.mode == "auto"
        return parse_text_call(message.get("content"), tools, narrow=auto, heard=heard if auto else None)


class Heard:
    """What the tool messages of one conversation showed the model, as a quoted call is looked for in it: without
    whitespace or the line numbers `read` (and `cat -n`) put before each line, so a file's call is found however
    the model re-indents it; JSON-escaped too (a result that holds it inside a JSON string)."""

    def __init__(self) -> None:
        self._seen: list[str] = []

    def add(self, contents: Iterable[Any]) -> None:
        self._seen.extend(_squeezed(_NUMBERED.sub("", c)) for c in contents if isinstance(c, str))

    def showed(self, text: str) -> bool:
        needle = _squeezed(text)
        if not needle:
            return False
        escaped = json.dumps(needle, ensure_ascii=False)[1:-1]
        return any(needle in seen or escaped in seen for seen in self._seen)


_NUMBERED = re.compile(r"^[ \t]*\d+\t", re.M)  # `read`'s line numbers: `12\t…`
_SPACE = re.compile(r"\s+")


def _squeezed(text: str) -> str:
    return _SPACE.sub("", text)


def _tagged(text: str) -> list[_Span]:
    out = []
    for m in _TAGGED.finditer(text):
        body = m.group(2).strip()
        fenced = _FENCED.fullmatch(body)  # some models fence the JSON inside the tag too
        inner = fenced.group(1) if fenced else body
        value, ok = _json(inner)
        calls = _calls(value) if ok else []
        if not calls and isinstance(value, dict) and isinstance(value.get("name"), str):
            calls = [(value["name"], None)]  # a name and no arguments: a call of a tool that takes none
        broken = None if calls else f"a <{m.group(1)}> block that is not a JSON call with `name` and `arguments`"
        out.append(_Span(m.end(), calls, broken, _shown(inner, value, ok)))
    return out


def _functions(text: str) -> list[_Span]:
    """llama-cpp-python's form: `functions.NAME:` then the arguments' JSON, each call up to the next one."""
    found = list(_FUNCTIONS.finditer(text))
    out = []
    for i, m in enumerate(found):
        end = found[i + 1].start() if i + 1 < len(found) else len(text)
        body = text[m.end():end].strip()
        value, ok = _json(body) if body else (None, False)
        if ok and isinstance(value, dict):
            out.append(_Span(end, [(m.group(1), value)], shown=(text[m.start():end],)))
        elif body and not body.startswith("{"):
            continue  # prose that happens to start a line with `functions.x:`, not a call
        else:
            out.append(_Span(end, [], f"`functions.{m.group(1)}:` with no JSON object of arguments after it",
                             (text[m.start():end],)))
    return out


def _fenced(text: str, names: set[str], taken: list[tuple[int, int]], *, whole: bool = False) -> list[_Span]:
    """Fenced JSON bodies outside the tag blocks `taken` (sorted, not overlapping, as finditer gives them); `whole`:
    only a fence that is the whole reply (a fenced block after prose is an answer that shows one)."""
    out = []
    for m in _FENCED.finditer(text):
        if whole and (text[:m.start()].strip() or text[m.end():].strip()):
            continue
        i = bisect.bisect_right(taken, (m.start(1), len(text) + 1)) - 1  # the last block starting before it
        if i >= 0 and taken[i][0] <= m.start(1) < taken[i][1]:
            continue  # inside a <tool_call> block: counted there
        span = _json_span(m.group(1), m.end(), names)
        if span is not None:
            out.append(span)
    return out


def _bare(text: str, names: set[str]) -> list[_Span]:
    """The whole reply a JSON call (no prose around it)."""
    body = text.strip()
    if not body.startswith(("{", "[")):
        return []
    span = _json_span(body, len(text.rstrip()), names)
    return [span] if span is not None else []


def _json_span(body: str, end: int, names: set[str]) -> _Span | None:
    """A fenced or bare JSON body: a call when it names a tool of this run, else None (an answer's JSON)."""
    value, ok = _json(body)
    if not ok:
        named = _NAMED.search(body)
        if named and named.group(1) in names and any(f'"{k}"' in body for k in _ARGUMENT_KEYS):
            return _Span(end, [], f"a call of `{named.group(1)}` written as text that is not valid JSON", (body,))
        return None
    calls = _calls(value)
    if not any(name in names for name, _ in calls):
        return None
    return _Span(end, calls, shown=_shown(body, value, ok))


def _shown(body: str, value: Any, ok: bool) -> tuple[str, ...]:
    """The call as written, and as canonical JSON when it parses (a tool that showed it re-encoded)."""
    return (body, canonical(value)) if ok else (body,)


def _json(text: str) -> tuple[Any, bool]:
    """The text's JSON value, and whether it is one: nested past MAX_DEPTH it is none (the search for a call
    in it recurses: `{"tool_calls": [` 330 times ran it out of stack)."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):  # the model's text, nested past the parser's depth: no call
        return None, False
    return (None, False) if nested_over(value) else (value, True)


def _calls(value: Any) -> list[tuple[str, Any]]:
    """(name, arguments) in the shapes models write calls as: {"name", "arguments"|"parameters"},
    {"function": {"name", "arguments"}}, {"tool_calls": [...]}, or a list of those."""
    if isinstance(value, list):
        return [call for item in value for call in _calls(item)]
    if not isinstance(value, dict):
        return []
    if isinstance(value.get("tool_calls"), list):
        return _calls(value["tool_calls"])
    if isinstance(value.get("function"), dict):
        return _calls(value["function"])
    name = value.get("name")
    key = next((k for k in _ARGUMENT_KEYS if k in value), None)
    return [(name, value[key])] if isinstance(name, str) and key is not None else []


def _arguments(arguments: Any) -> str | None:
    """The arguments as the JSON object's text a `tool_calls` entry carries; None when they are not one.
    An object becomes its canonical JSON (as Ollama's objects do); a JSON string is kept as written."""
    if arguments is None:
        return "{}"
    if isinstance(arguments, dict):
        return canonical(arguments)
    if isinstance(arguments, str):
        value, ok = _json(arguments) if arguments.strip() else ({}, True)
        return (arguments if arguments.strip() else "{}") if ok and isinstance(value, dict) else None
    return None
