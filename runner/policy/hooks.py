"""The policy's `hooks` section, in Claude Code's shape: which programs run at which of the loop's points, for which
tools (docs/hooks.md). Pure: read from the merged sections (runner/policy/load.py concatenates a chain's, base
first), checked for `policy check` with each problem located.

A matcher is an RE2 regex full-matched against a tool's name and each of its aliases (empty or `*`: every tool).
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from runner.policy.jsonc import Located, PolicyError
from runner.policy.match import compile_regex

EVENTS = ("PreToolUse", "PostToolUse", "Stop", "SubagentStop", "SessionStart")
TOOL_EVENTS = frozenset({"PreToolUse", "PostToolUse"})
DEFAULT_TIMEOUT_S = 60.0
DEFAULT_MAX_BLOCKS = 3


@dataclass(frozen=True)
class HookCommand:
    command: str
    timeout_s: float = DEFAULT_TIMEOUT_S
    on_error: str = "ignore"  # ignore | deny
    writes: bool = False  # the workspace writable (a PostToolUse hook may write its call's edits anyway)
    network: tuple[str, ...] = ()  # hosts it may reach (HOST, HOST:PORT, globs), the policy's network rules too


@dataclass(frozen=True)
class HookEntry:
    """One matcher entry of one event, with its place (`event`, `index`) in the merged section."""

    event: str
    index: int
    matcher: str
    hooks: tuple[HookCommand, ...]
    max_blocks: int = DEFAULT_MAX_BLOCKS

    def matches(self, names: Iterable[str]) -> bool:
        """Whether the entry runs for a tool known by `names` (its name, then its aliases)."""
        if self.event not in TOOL_EVENTS or self.matcher in ("", "*"):
            return True
        pattern = _compiled(self.matcher)
        return any(pattern.fullmatch(name) is not None for name in names)

    def label(self) -> str:
        return f"{self.event}[{self.index}]"


@cache
def _compiled(matcher: str) -> Any:
    return compile_regex(matcher)


def hook_entries(sections: dict[str, Any]) -> tuple[HookEntry, ...]:
    """Every entry of the (validated) `hooks` section, event by event in EVENTS' order, each in file order."""
    section = sections.get("hooks")
    if not isinstance(section, dict):
        return ()
    out: list[HookEntry] = []
    for event in EVENTS:
        for i, raw in enumerate(section.get(event) or ()):
            commands = tuple(HookCommand(h["command"], float(h.get("timeout", DEFAULT_TIMEOUT_S)),
                                         h.get("onError", "ignore"), bool(h.get("writes", False)),
                                         tuple(h.get("network") or ()))
                             for h in raw.get("hooks", ()))
            out.append(HookEntry(event, i, str(raw.get("matcher", "")), commands,
                                 int(raw.get("maxBlocks", DEFAULT_MAX_BLOCKS))))
    return tuple(out)


def merged_hooks(base: Any, own: Any) -> dict[str, Any]:
    """`extends`: each event's entries concatenated, the base's first (a base's guard is never replaced)."""
    base = base if isinstance(base, dict) else {}
    own = own if isinstance(own, dict) else {}
    return {event: [*(base.get(event) or []), *(own.get(event) or [])] for event in EVENTS
            if base.get(event) or own.get(event)}


# A hook command that runs what the workspace declares: the agent could rewrite the manifest (a Makefile's recipe,
# package.json's scripts, tox.ini) that the judge then runs.
_MANIFEST_RUNNERS = (("npm", "run"), ("npm", "test"), ("pnpm", "run"), ("yarn", "run"), ("make",), ("just",),
                     ("tox",), ("nox",), ("invoke",), ("rake",), ("gradle",), ("./gradlew",), ("mvn",))


def manifest_problem(command: str) -> str | None:
    """Why `command` runs a workspace manifest (`make`, `npm run`, `python -m` of a workspace module, …), or None.
    Read word by word, each `&&`/`;`/`|` part alone; a command it cannot split is judged whole."""
    try:
        words = shlex.split(command, comments=True)
    except ValueError:
        words = command.split()
    parts: list[list[str]] = [[]]
    for word in words:
        if word in ("&&", "||", ";", "|", "&"):
            parts.append([])
        else:
            parts[-1].append(word)
    for part in parts:
        while part and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", part[0]):  # VAR=value prefixes
            part = part[1:]
        if not part:
            continue
        program = part[0].rsplit("/", 1)[-1] if not part[0].startswith("./") else part[0]
        for runner in _MANIFEST_RUNNERS:
            if (program, *part[1:len(runner)]) == runner:
                return f"`{' '.join(runner)}` runs what a workspace manifest declares, which the agent can rewrite"
        if re.fullmatch(r"python[0-9.]*", program) and "-m" in part[1:]:
            module = part[part.index("-m") + 1] if part.index("-m") + 1 < len(part) else ""
            return (f"`python -m {module}` may run a module of the workspace, which the agent can rewrite "
                    "(name the program by its path outside the workspace)")
    return None


def hook_programs(sections: dict[str, Any], workspace: Path) -> list[Path]:
    """What of the workspace a hook runs, to be protected like a policy file (runner/policy/limits.py): each word
    of a command that names a path inside the workspace (one with a `/`, or a script's name beside it) — whether
    it exists yet or not —, with its whole directory tree (the agent must not rewrite the hook that judges it, nor
    a module it imports); a program at the workspace's top, itself alone."""
    root = workspace.resolve()
    out: list[Path] = []
    for entry in hook_entries(sections):
        for hook in entry.hooks:
            try:
                words = shlex.split(hook.command, comments=True)
            except ValueError:
                words = hook.command.split()
            for word in words:
                if word.startswith("-") or not ("/" in word or _SCRIPT.search(word)):
                    continue
                path = Path(os.path.normpath(root / word))
                if not path.is_relative_to(root) or path == root:
                    continue
                top = path.relative_to(root).parts[0]
                protect = path if len(path.relative_to(root).parts) == 1 else root / top
                if protect not in out:
                    out.append(protect)
    return out


_SCRIPT = re.compile(r"\.(py|sh|bash|js|mjs|cjs|ts|rb|pl)$")


def missing_program(command: str) -> str | None:
    """Why the program `command` starts is missing: one named by an absolute path that is no file here (a path
    relative to the workspace is the run's to find). None when it is there, or cannot be told."""
    try:
        words = shlex.split(command, comments=True)
    except ValueError:
        return None
    words = [w for w in words if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", w)][:1]
    if words and os.path.isabs(words[0]) and not os.path.isfile(words[0]):
        return f"no such program: {words[0]}"
    return None


def hook_errors(located: Located, file: str) -> list[PolicyError]:
    """`policy check`'s problems with the `hooks` section beyond its schema: a matcher that is no RE2 regex, a
    command that runs a workspace manifest; each at its value."""
    section = located.value.get("hooks") if isinstance(located.value, dict) else None
    if not isinstance(section, dict):
        return []
    errors: list[PolicyError] = []
    for event, entries in section.items():
        if event not in EVENTS or not isinstance(entries, list):
            continue  # the schema's to report
        for i, entry in enumerate(entries):
            if not isinstance(entry, dict):
                continue
            matcher = entry.get("matcher")
            if isinstance(matcher, str) and matcher not in ("", "*"):
                try:
                    _compiled(matcher)
                except ValueError as exc:
                    line, col = located.position(("hooks", event, i, "matcher"))
                    errors.append(PolicyError(file, line, col, f"hooks.{event}[{i}].matcher: {exc}"))
            for j, hook in enumerate(entry.get("hooks") or []):
                command = hook.get("command") if isinstance(hook, dict) else None
                if isinstance(command, str) and (why := manifest_problem(command) or missing_program(command)):
                    line, col = located.position(("hooks", event, i, "hooks", j, "command"))
                    errors.append(PolicyError(file, line, col, f"hooks.{event}[{i}].hooks[{j}].command: {why}"))
    return errors
