"""A subagent profile's scope: `disallowedTools` and `paths` (docs/subagents.md#scopes).

    ---
    name: docs-writer
    description: Writes the docs.
    disallowedTools: web_*, task
    paths:
      read: [src/, docs/]
      write: [docs/]
    ---

`disallowedTools` is checked before `tools`: a tool it names (or matches: `*` and `?` are globs, in both lists) is
never offered, even when `tools` lists it. `paths` narrows the workspace files the child may touch: `read` the
targets of its `read`-domain calls, `write` those of its `edit`-domain calls (a path it may write it may read too).
An entry is a workspace-relative directory or file (everything below it), or a glob (`src/**/*.py`).

Enforced twice, as a narrowing of what the policy allows (it never widens it):
- by the policy intersection (`PathScope`, a restriction checked before the policy, as a profile's `tools` are) for
  every file tool, and for the files grep, glob and list meet (runner/tools/readable.py), on their resolved paths;
- by the sandbox's mounts for the child's commands (runner/sandbox/scope.py): the workspace read-only but for the
  `write` entries, and hidden but for the `read` and `write` ones when `read` is given.
A glob cannot be a mount, and a command's files cannot be told from its text: a child whose scope has a glob, or that
runs where no sandbox is active, gets no `bash` (`policy explain --agent NAME` says so). MCP tools are never
offered to a scoped child: their servers are the run's processes, not the child's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from fnmatch import fnmatchcase
from pathlib import PurePosixPath
from typing import Any

from runner.policy.match import Pattern, compile_pattern
from runner.policy.model import Target
from runner.policy.targets import HARD_LINK

GLOB_CHARS = frozenset("*?[")


class ScopeError(ValueError):
    pass


@dataclass(frozen=True)
class Scope:
    """`read`/`write`: workspace-relative entries; None: that kind of access is not narrowed."""

    read: tuple[str, ...] | None = None
    write: tuple[str, ...] | None = None

    @property
    def globbed(self) -> bool:
        return any(GLOB_CHARS & set(e) for e in (*(self.read or ()), *(self.write or ())))

    def readable(self) -> tuple[str, ...] | None:
        """What the child may read: its `read` and `write` entries; None when `read` is not given."""
        return None if self.read is None else (*self.read, *(self.write or ()))

    def describe(self) -> dict[str, Any]:
        return {k: list(v) for k, v in (("read", self.read), ("write", self.write)) if v is not None}


def parse_scope(value: object, where: str) -> Scope | None:
    """A profile's `paths`: a mapping of `read` and/or `write` to a list (or one string) of workspace-relative
    paths or globs. An absolute path, or one that climbs out with `..`, is refused."""
    if value is None:
        return None
    keys = [f.name for f in fields(Scope)]
    if not isinstance(value, Mapping) or not value or set(value) - set(keys):
        raise ScopeError(f"{where}: paths must be a mapping with read and/or write lists")
    lists: dict[str, tuple[str, ...]] = {}
    for key in keys:
        if key in value:
            lists[key] = tuple(_entry(e, where) for e in _listed(value[key], f"{where}: paths.{key}"))
    return Scope(lists.get("read"), lists.get("write"))


def _listed(value: object, where: str) -> list[str]:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(i, str) and i.strip() for i in items):
        raise ScopeError(f"{where} must be a list of workspace paths or globs")
    return [i.strip() for i in items]


def _entry(raw: str, where: str) -> str:
    path = PurePosixPath(raw)
    if path.is_absolute() or ".." in path.parts:
        raise ScopeError(f"{where}: paths entry {raw!r} must be inside the workspace (relative, no '..')")
    return path.as_posix()  # `src/` and `./src` are `src`


def parse_names(value: object, where: str, aliases: Mapping[str, str]) -> tuple[str, ...]:
    """`disallowedTools`: tool names (ours or Claude's) or globs of them, as a list or a comma-separated string."""
    if value is None:
        return ()
    items = value.replace(",", " ").split() if isinstance(value, str) else value
    # A `Bash(pattern)` entry would match no tool name and deny nothing: refused, not silently ignored.
    if not isinstance(items, list) or not all(isinstance(i, str) and i.strip() and "(" not in i for i in items):
        raise ScopeError(f"{where}: disallowedTools must be tool names or globs (a Bash(pattern) entry narrows "
                         "in `tools`)")
    return tuple(aliases.get(i.strip().lower(), i.strip()) for i in items)


def matches(name: str, patterns: Iterable[str]) -> bool:
    return any(fnmatchcase(name, p) for p in patterns)


def offered(names: Iterable[str], domains: Mapping[str, str], listed: Iterable[str] | None,
            disallowed: Iterable[str], scope: Scope | None, sandboxed: bool) -> tuple[list[str], dict[str, str]]:
    """Which of the parent's tools (`names`, their `domains`) the child gets, and why each other one is not:
    `disallowedTools` first, then `tools` (None: every one), then its scope (no MCP tools; no `bash` with a glob
    or without an active sandox). The one rule `task`'s delegation and `policy explain --agent` share."""
    keep: list[str] = []
    dropped: dict[str, str] = {}
    listed = None if listed is None else tuple(listed)
    for name in names:
        if matches(name, disallowed):
            dropped[name] = "named by disallowedTools"
        elif listed is not None and not matches(name, listed):
            dropped[name] = "not in tools"
        elif scope is not None and domains.get(name) == "mcp":
            dropped[name] = "an MCP tool: its server is not confined to the paths scope"
        elif scope is not None and domains.get(name) == "bash" and scope.globbed:
            dropped[name] = "the paths scope has a glob, which the sandbox cannot mount"
        elif scope is not None and domains.get(name) == "bash" and not sandboxed:
            dropped[name] = "no sandbox is active to confine its commands to the paths scope"
        else:
            keep.append(name)
    return keep, dropped


@dataclass
class PathScope:
    """A restriction (runner/workspace/skills.py Restricting): a call whose file targets are outside the profile's
    paths is refused before the policy decides it."""

    profile: str
    scope: Scope
    _compiled: dict[str, list[Pattern]] = field(default_factory=dict)

    def fields(self) -> dict[str, Any]:
        return {"profile": self.profile}

    def refuses(self, tool: str, targets: list[Target]) -> str | None:
        for t in targets:
            # A read is decided by read ∪ write, an edit by write; other domains are not narrowed here.
            key = {"read": "read", "edit": "write"}.get(t.domain)
            entries = self.scope.readable() if key == "read" else self.scope.write if key == "write" else None
            if entries is None or (t.note or "").startswith(HARD_LINK):
                continue  # not narrowed; a hard link's other name is the policy's to decide (it asks)
            if not any(p.matches(t.target) for p in self._patterns(key or "", entries)):
                shown = t.target.removeprefix("workspace:")
                return (f"your profile '{self.profile}' may {'read' if key == 'read' else 'write'} only "
                        f"{', '.join(entries) or 'nothing'}: {shown} is outside")
        return None

    def _patterns(self, key: str, entries: tuple[str, ...]) -> list[Pattern]:
        found = self._compiled.get(key)
        if found is None:
            found = self._compiled[key] = [compile_pattern(f"workspace:{p}") for e in entries for p in _globs(e)]
        return found


def _globs(entry: str) -> tuple[str, ...]:
    """The path globs an entry stands for: a glob itself; a path, it and everything below it."""
    if GLOB_CHARS & set(entry):
        return (entry,)
    return ("**",) if entry == "." else (entry, f"{entry}/**")
