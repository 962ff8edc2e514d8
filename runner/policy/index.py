"""The fast path of "the last matching rule decides": an index that finds the few rules that can match a target.

`decide.decide_target_linear` tries every rule from the end; with an organisation-wide policy of thousands of
rules that is most of a call's cost. Here the rules of a policy are grouped, once, by the (domain, scheme) of
the targets they can match, and within a group by a literal every matching target must start or end with:

- a glob's literal prefix (before its first `*`, `?`, `[` or `\\`) and, for a path glob, its literal basename
  suffix (after its last `/`, `*`, `?`, `[`, `]` or `\\`): `src/module5/**` needs `src/module5/`, `**/*.gen7` `.gen7`;
- the literal prefix and suffix of a `regex:` rule's full match, read from the regex's parse tree.

A rule with neither is tried for every target of its group (the `**` catch-all, the git-control hard limit).
A target's candidates are tried from the last rule down and the first match decides, exactly as the linear
walk would: a prefilter only ever drops a rule that cannot match (tests/policy/test_fast_path_differential.py
holds the two walks to the same decision and the same rule).

Path globs match `[/]+` for each `/` (wcmatch): path keys and targets are compared with runs of `/` collapsed,
and a path suffix ignores the trailing slashes a glob also accepts.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from wcmatch import fnmatch, glob

from runner.policy.match import TEXT_SCHEMES, split_target

if TYPE_CHECKING:
    from runner.policy.model import Rule

_GLOB_META = frozenset("*?[\\")
_SLASHES = re.compile(r"/{2,}")
# In a character class, where Python's parser and RE2 read differently (RE2's POSIX classes, `[[:alpha:]]`:
# Python reads a class then a literal `]`) or Python would warn (a nested set, set operations): no literal.
_SET_MARKS = ("[[", "[:", "--", "&&", "~~", "||")


def _case_sensitive() -> bool:
    """A literal key is only a necessary condition where globs compare case-sensitively (Linux): elsewhere
    every glob rule is left unindexed."""
    return not (glob.compile("A", flags=glob.GLOBSTAR).match("a") or fnmatch.compile("A").match("a"))


_INDEX_GLOBS = _case_sensitive()


def _collapse(text: str) -> str:
    return _SLASHES.sub("/", text) if "//" in text else text


def glob_prefix(body: str) -> str:
    """The literal text before a glob's first wildcard or escape."""
    for i, c in enumerate(body):
        if c in _GLOB_META:
            return body[:i]
    return body


def glob_suffix(body: str, *, path: bool) -> str:
    """The literal text after a glob's last wildcard, escape or `[…]` class (and, for a path glob, its last `/`)."""
    stops = _GLOB_META | {"]", "/"} if path else _GLOB_META | {"]"}
    for i in range(len(body) - 1, -1, -1):
        if body[i] in stops:
            return body[i + 1:]
    return body


def _literal_run(items: list[tuple[Any, Any]], reverse: bool) -> tuple[str, bool]:
    """The literal text every match of these regex parse items starts (or, reversed, ends) with, and whether
    the items are wholly that literal. Zero-width items (anchors, lookarounds) constrain without consuming:
    skipping them keeps the literal a necessary condition."""
    from re import _constants as c  # Python's own regex parser: only the tree's shape is read

    out: list[str] = []
    for op, av in reversed(items) if reverse else items:
        if op is c.LITERAL:
            out.append(chr(av))
        elif op in (c.AT, c.ASSERT, c.ASSERT_NOT):
            continue
        elif op is c.SUBPATTERN and not (av[1] & c.SRE_FLAG_IGNORECASE):
            inner, whole = _literal_run(list(av[3]), reverse)
            out.append(inner)
            if not whole:
                return "".join(reversed(out) if reverse else out), False
        else:
            return "".join(reversed(out) if reverse else out), False
    return "".join(reversed(out) if reverse else out), True


def regex_literals(text: str) -> tuple[str, str]:
    """(prefix, suffix) every full match of this regex has; ("", "") when unsure. RE2 accepted the regex at
    load; Python's parser reads its shape (the two agree on the syntax both accept). Anything Python cannot
    parse, or a case-insensitive or verbose regex, gets no literal: the rule is then tried for every target."""
    from re import _constants as c
    from re import _parser

    if "[" in text and any(mark in text for mark in _SET_MARKS):
        return "", ""
    try:
        tree = _parser.parse(text)
    except Exception:
        return "", ""
    if tree.state.flags & (c.SRE_FLAG_IGNORECASE | c.SRE_FLAG_VERBOSE):
        return "", ""
    items = list(tree)
    return _literal_run(items, False)[0], _literal_run(items, True)[0]


@dataclass
class _Table:
    """Rule positions by a literal key, and the key lengths present (a target looks up each of its own
    prefixes or suffixes of those lengths)."""

    by_key: dict[str, list[int]] = field(default_factory=dict)
    lengths: list[int] = field(default_factory=list)

    def add(self, key: str, position: int) -> None:
        self.by_key.setdefault(key, []).append(position)

    def seal(self) -> None:
        self.lengths = sorted({len(k) for k in self.by_key})

    def hits(self, text: str, out: set[int], *, suffix: bool) -> None:
        by_key = self.by_key
        for n in self.lengths[:bisect_right(self.lengths, len(text))]:
            found = by_key.get(text[-n:] if suffix else text[:n])
            if found:
                out.update(found)


@dataclass
class _Group:
    """The rules that can match targets of one (domain, scheme), by what a matching target must contain."""

    always: list[int] = field(default_factory=list)  # rules tried for every target
    glob_prefix: _Table = field(default_factory=_Table)  # on the rest (slashes collapsed for a path)
    glob_suffix: _Table = field(default_factory=_Table)
    raw_prefix: _Table = field(default_factory=_Table)  # regex rules: on the rest as it is
    raw_suffix: _Table = field(default_factory=_Table)

    def seal(self) -> None:
        for table in (self.glob_prefix, self.glob_suffix, self.raw_prefix, self.raw_suffix):
            table.seal()


class RuleIndex:
    """The rules of one policy, indexed for `last_match`. Groups are built the first time a (domain, scheme)
    is decided, so loading a policy stays cheap and a run pays only for the kinds of targets it touches."""

    def __init__(self, rules: list[Rule]) -> None:
        self.rules = rules
        self.size = len(rules)
        self._groups: dict[tuple[str, str], _Group] = {}
        self._keys: dict[int, tuple[str, ...]] = {}

    def last_match(self, domain: str, target: str) -> Rule | None:
        """The last rule whose domain and pattern match: what the linear walk from the end finds."""
        scheme, rest = split_target(target)
        group = self._groups.get((domain, scheme))
        if group is None:
            group = self._groups[(domain, scheme)] = self._group(domain, scheme)
        found: set[int] = set(group.always)
        text = scheme in TEXT_SCHEMES
        if group.glob_prefix.by_key or group.glob_suffix.by_key:
            key = rest if text else _collapse("" if rest == "." else rest)
            group.glob_prefix.hits(key, found, suffix=False)
            group.glob_suffix.hits(key if text else key.rstrip("/"), found, suffix=True)
        group.raw_prefix.hits(rest, found, suffix=False)
        if group.raw_suffix.by_key:
            group.raw_suffix.hits(f"{scheme}:{rest}" if scheme else rest, found, suffix=True)
        rules = self.rules
        for position in sorted(found, reverse=True):
            if rules[position].pattern.matches(target):
                return rules[position]
        return None

    def _group(self, domain: str, scheme: str) -> _Group:
        group = _Group()
        for position, rule in enumerate(self.rules):
            pattern = rule.pattern
            if rule.domain not in ("*", domain) or (pattern.scheme and pattern.scheme != scheme):
                continue
            if pattern.kind == "regex":
                self._place_regex(group, position, scheme)
            elif pattern.kind == "glob" and _INDEX_GLOBS:
                self._place_glob(group, position, scheme in TEXT_SCHEMES)
            else:
                group.always.append(position)
        group.seal()
        return group

    def _place_glob(self, group: _Group, position: int, text: bool) -> None:
        body = split_target(self.rules[position].pattern.raw)[1]  # a lone `*` (meaning `**`) has no literal
        if text:
            # `git *` also matches the bare `git`: only the literal before ` *` is needed then.
            prefix = glob_prefix(body[:-2] if body.endswith(" *") else body)
            suffix = "" if body.endswith(" *") else glob_suffix(body, path=False)
        else:
            prefix = "" if body == "." else _collapse(glob_prefix(body))
            suffix = "" if body == "." else glob_suffix(body, path=True)
        if len(prefix) >= len(suffix) and prefix:
            group.glob_prefix.add(prefix, position)
        elif suffix:
            group.glob_suffix.add(suffix, position)
        else:
            group.always.append(position)

    def _place_regex(self, group: _Group, position: int, scheme: str) -> None:
        prefix, suffix = self._regex_keys(position)
        # The regex must fully match `scheme:rest` or the rest itself; a literal prefix of the former is,
        # past the scheme, one of the rest too.
        head = f"{scheme}:" if scheme else ""
        if prefix and not head.startswith(prefix):
            group.raw_prefix.add(prefix, position)
            if head and prefix.startswith(head):
                group.raw_prefix.add(prefix[len(head):], position)
        elif suffix:
            group.raw_suffix.add(suffix, position)  # looked up on `scheme:rest`, which ends with the rest
        else:
            group.always.append(position)

    def _regex_keys(self, position: int) -> tuple[str, ...]:
        keys = self._keys.get(position)
        if keys is None:
            keys = self._keys[position] = regex_literals(self.rules[position].pattern.raw[len("regex:"):])
        return keys
