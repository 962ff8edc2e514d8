"""Pattern matching on targets. Pure functions; patterns are compiled once per run.

A target is `scheme:rest` (`workspace:src/a.py`, `fs:/etc/hosts`, `shell:npm test`).
A pattern may carry the same scheme (then it only matches that scheme), no scheme
(matched against the target's rest, whatever its scheme), or be `regex:<re>`.

`regex:` rules run on RE2, whose matching time is linear in the target: a rule such as
`regex:(a+)+$` cannot hold a run past its timeout the way a backtracking engine would.
RE2 has no lookaround or backreferences; a pattern using them is a load error.

Glob semantics depend on the target's scheme: path-like targets use path globs
(`*` one segment, `**` any depth, `?` one character); command-like targets
(`shell:`, `query:`) use text globs where `*` matches anything, and a pattern
ending in ` *` also matches the bare command (`git *` matches `git`).
The whole pattern `*` is the exception: it matches every target, as `**` does.
"""

from __future__ import annotations

import difflib
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import re2
from wcmatch import fnmatch, glob

SCHEMES = ("workspace", "fs", "shell", "url", "query", "mcp", "agent", "net")
TEXT_SCHEMES = frozenset({"shell", "query"})

_PATH_FLAGS = glob.GLOBSTAR | glob.DOTMATCH
_TEXT_FLAGS = fnmatch.DOTMATCH


def split_target(target: str) -> tuple[str, str]:
    scheme, sep, rest = target.partition(":")
    if sep and scheme in SCHEMES:
        return scheme, rest
    return "", target


@dataclass(frozen=True)
class Pattern:
    raw: str
    scheme: str  # "" when the pattern applies to any scheme
    test: Callable[[str, str], bool]  # (target scheme, target rest) -> matched
    kind: str = "custom"  # "glob" or "regex" when compile_pattern made it: runner/policy/index.py reads it

    def matches(self, target: str) -> bool:
        scheme, rest = split_target(target)
        if self.scheme and self.scheme != scheme:
            return False
        return self.test(scheme, rest)


def compile_pattern(raw: str) -> Pattern:
    """Compile once. Raises ValueError for an invalid regex."""
    if raw.startswith("regex:"):
        rx = compile_regex(raw[len("regex:") :])
        # Full match against the whole target or, for convenience, its rest.
        return Pattern(raw, "", lambda s, r: bool(rx.fullmatch(f"{s}:{r}" if s else r) or rx.fullmatch(r)), "regex")
    scheme, body = split_target(raw)
    if raw == "*":
        # A lone `*` is written meaning "everything" (OpenCode's "*", Claude Code's `Bash(*)`); as a path
        # glob it would be one segment (`a.txt`, not `notes/a.txt`). `workspace:*` keeps the glob meaning.
        body = "**"
    return Pattern(raw, scheme, _GlobTest(body), "glob")


class _GlobTest:
    """A glob's test. Which matcher applies depends on the target's scheme; each is compiled on first use
    and kept, so a pattern is compiled at most once per run, never per call, and loading a policy compiles
    none (most rules of a large policy never meet a target they could match)."""

    __slots__ = ("_bare", "_path", "_text", "body")

    def __init__(self, body: str) -> None:
        self.body = body
        self._path: Any = None
        self._text: Any = None
        self._bare: Any = None

    def __call__(self, s: str, r: str) -> bool:
        body = self.body
        if s in TEXT_SCHEMES:
            if self._text is None:
                self._text = fnmatch.compile(body, flags=_TEXT_FLAGS)
            if self._text.match(r):
                return True
            if not body.endswith(" *"):
                return False
            if self._bare is None:
                self._bare = fnmatch.compile(body[:-2], flags=_TEXT_FLAGS)
            return bool(self._bare.match(r))
        if body == ".":
            return r == "."
        if self._path is None:
            self._path = glob.compile(body, flags=_PATH_FLAGS)
        return bool(self._path.match("" if r == "." else r))


# What reads as a scheme at the start of a pattern: a name of two characters or more (not a drive letter; no dot:
# `example.com:*` is a host), then `:`, but not before `//` (a URL written without `url:`, which matches a url
# target's rest) nor before a port number (`localhost:8080`, which matches a net target's rest).
_SCHEME_LIKE = re.compile(r"([A-Za-z][A-Za-z0-9_+-]+):(?!//)(?![0-9]+$)")


def unknown_scheme(raw: str) -> str | None:
    """Why a rule pattern names a target scheme no tool produces (`vault:secret/**`), else None. Such a pattern
    would silently match nothing (it is taken as a scheme-less glob on the text `vault:…`), so a policy that
    says it is an error: with a did-you-mean when a known scheme is close (`worksapce:` → `workspace:`)."""
    found = _SCHEME_LIKE.match(raw)
    if found is None or found.group(1) in (*SCHEMES, "regex"):
        return None
    name = found.group(1)
    known = [*SCHEMES, "regex"]
    close = difflib.get_close_matches(name, known, n=1) or difflib.get_close_matches(name.lower(), known, n=1)
    hint = f"did you mean '{close[0]}:'?" if close else "known schemes: " + ", ".join(f"{s}:" for s in known)
    return f"unknown target scheme '{name}:' in pattern {raw!r} ({hint})"


def compile_rule_pattern(raw: str) -> Pattern:
    """A pattern a policy file or --approve wrote: `compile_pattern`, and an unknown scheme is an error too.
    (A recorded policy is read back with `compile_pattern`: what a run used is never refused afterwards.)"""
    why = unknown_scheme(raw)
    if why is not None:
        raise ValueError(why)
    return compile_pattern(raw)


def _re2_options() -> re2.Options:
    options = re2.Options()
    options.log_errors = False  # RE2 would print every rejected pattern to stderr; the error says it
    return options


_RE2_OPTIONS = _re2_options()


def compile_regex(text: str) -> re2._Regexp:
    """An RE2 regex; raises ValueError `invalid regex '…': why`. A plain syntax error gets Python's
    wording (what earlier versions said); a pattern only a backtracking engine can run says so."""
    try:
        return re2.compile(text, options=_RE2_OPTIONS)
    except re2.error as exc:
        reason = exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # e.g. FutureWarning "possible nested set"
        try:
            re.compile(text)
        except re.error as exc:
            raise ValueError(f"invalid regex {text!r}: {exc}") from None
    raise ValueError(f"invalid regex {text!r}: {reason} (regex: rules run on RE2, in linear time: no lookaround, "
                     "backreferences or possessive quantifiers)") from None


def exact_pattern(target: str, *, subtree: bool = False) -> str:
    """A pattern matching this target only (and, with subtree, everything below it)."""
    if subtree:
        return "regex:" + re.escape(target) + "(/.*)?"
    if any(c in target for c in "*?[]"):
        return "regex:" + re.escape(target)
    return target
