"""What git would ignore in the workspace, and the file walk glob and grep share.

The rules are git's: `.git/info/exclude` (lowest), the workspace's root `.gitignore`, then each nested
`.gitignore`, whose patterns are relative to its own directory and override those above it; the last
matching pattern wins, and nothing below an ignored directory can be re-included. Nested patterns are
rewritten relative to the workspace (`/dist` in `sub/` becomes `sub/dist`, `*.log` becomes
`sub/**/*.log`) so one pathspec GitIgnoreSpec per directory decides, with git's own precedence.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from pathspec import GitIgnoreSpec
from wcmatch import glob as wc

from runner.tools.base import Cancel, ToolError

# Never searched, whatever the pattern: git's store and the runner's own state.
SKIP_NAMES = frozenset({".git", ".agent-run"})
_GLOB_FLAGS = wc.GLOBSTAR | wc.DOTMATCH


class IgnoreMatcher:
    """One per tool call: each ignore file is read once, when the walk first reaches its directory."""

    def __init__(self, workspace: Path, cancel: Cancel | None = None) -> None:
        self.workspace = workspace
        # Asked at every directory a walk enters (a walk of / runs for minutes): its `check` ends the walk there
        # (Cancelled) at the run's stop or wall clock.
        self.cancel = cancel
        self._lines: dict[Path, list[str]] = {}
        self._specs: dict[Path, GitIgnoreSpec | None] = {}
        self._dirs: dict[Path, bool] = {}

    def ignored(self, path: Path, is_dir: bool) -> bool:
        """Whether git ignores `path` (absolute, as walked: its last component is not resolved)."""
        if not path.is_relative_to(self.workspace) or path == self.workspace:
            return False
        parent = path.parent
        if parent == self.workspace and path.name == ".agent-run" and is_dir:
            # Its own .gitignore (`*`, runner/record/rundir.py) makes git ignore the whole directory, but
            # no pattern above names it: said here, or `list` shows the runs as if they were the project's.
            return "*" in self._own_rules(path)
        if parent != self.workspace and self._dir_ignored(parent):
            return True
        return self._matches(path, is_dir)

    def directory(self, directory: Path) -> tuple[GitIgnoreSpec | None, str]:
        """For a walk that reached `directory` (not itself ignored): the rules for its entries, and the
        prefix (relative to the workspace) to match their names with."""
        if self.cancel is not None:
            self.cancel.check()
        if not directory.is_relative_to(self.workspace):
            return None, ""
        rel = directory.relative_to(self.workspace).as_posix()
        return self._spec(directory), "" if rel == "." else rel + "/"

    @staticmethod
    def _own_rules(directory: Path) -> list[str]:
        with contextlib.suppress(OSError, UnicodeDecodeError):
            return [line.strip() for line in (directory / ".gitignore").read_text(encoding="utf-8").splitlines()]
        return []

    def _dir_ignored(self, directory: Path) -> bool:
        if directory not in self._dirs:
            self._dirs[directory] = self.ignored(directory, is_dir=True)
        return self._dirs[directory]

    def _matches(self, path: Path, is_dir: bool) -> bool:
        spec = self._spec(path.parent)
        if spec is None:
            return False
        rel = path.relative_to(self.workspace).as_posix()
        return spec.match_file(rel + "/" if is_dir else rel)

    def _spec(self, directory: Path) -> GitIgnoreSpec | None:
        """The rules that apply to entries of `directory`: its own .gitignore's and all above it."""
        if directory not in self._specs:
            lines = self._rules(directory)
            parent_lines = self._rules(directory.parent) if directory != self.workspace else []
            if directory != self.workspace and lines is parent_lines:
                self._specs[directory] = self._spec(directory.parent)
            else:
                self._specs[directory] = _compile(lines) if lines else None
        return self._specs[directory]

    def _rules(self, directory: Path) -> list[str]:
        """Patterns relative to the workspace, lowest precedence first. Shared with the parent's list
        (the same object) when `directory` has no .gitignore of its own."""
        if directory not in self._lines:
            if directory == self.workspace:
                lines = _read(self.workspace / ".git" / "info" / "exclude") + _read(directory / ".gitignore")
            else:
                prefix = directory.relative_to(self.workspace).as_posix()
                own = [r for line in _read(directory / ".gitignore") if (r := _rebase(line, prefix))]
                parent = self._rules(directory.parent)
                lines = parent + own if own else parent
            self._lines[directory] = lines
        return self._lines[directory]


def _read(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:  # absent (the usual case), a directory, unreadable
        return []


def _rebase(line: str, prefix: str) -> str | None:
    """A line of `prefix/.gitignore` as a pattern relative to the workspace (None: not a pattern)."""
    while line.endswith(" ") and not line.endswith("\\ "):
        line = line[:-1]  # git drops trailing spaces unless escaped
    if not line or line.startswith("#"):
        return None
    negate = line.startswith("!")
    body = line[1:] if negate else line
    if not body.rstrip("/"):
        return None
    # Glob characters in the directory's own name are literal.
    base = "".join("\\" + c if c in "*?[]\\" else c for c in prefix)
    if base[0] in "!#":
        base = "\\" + base
    # A slash anywhere but at the end anchors the pattern to its .gitignore's directory.
    rebased = f"{base}/{body.lstrip('/')}" if "/" in body.rstrip("/") else f"{base}/**/{body}"
    return ("!" if negate else "") + rebased


def _compile(lines: list[str]) -> GitIgnoreSpec:
    try:
        return GitIgnoreSpec.from_lines(lines)
    except Exception:  # a line pathspec cannot parse; git skips such lines, so do we
        good = []
        for line in lines:
            with contextlib.suppress(Exception):
                GitIgnoreSpec.from_lines([line])
                good.append(line)
        return GitIgnoreSpec.from_lines(good)


def find_files(root: Path, pattern: str, matcher: IgnoreMatcher) -> list[str]:
    """Files below the directory `root` matching the glob `pattern`, as sorted posix paths relative to it.

    Never enters .git or .agent-run. Skips what git ignores, unless the caller named it: `root` or the
    pattern's leading literal directories (`build` in `build/**/*.js`) inside an ignored directory, or a
    pattern that is a plain file name. Raises ToolError for a pattern reaching outside `root`."""
    return list(iter_files(root, pattern, matcher))


def iter_files(root: Path, pattern: str, matcher: IgnoreMatcher) -> Iterator[str]:
    """`find_files`, lazily and in the same (sorted) order, so a caller may stop early. A bad pattern
    raises ToolError at once, not at the first file."""
    segments = [s for s in pattern.split("/") if s not in ("", ".")]
    if pattern.startswith("/") or os.path.isabs(pattern) or ".." in segments:
        raise ToolError("InvalidArguments", f"pattern {pattern!r} must stay below path; to search elsewhere, set path")
    literal = 0
    while literal < len(segments) - 1 and not wc.is_magic(segments[literal], flags=_GLOB_FLAGS):
        literal += 1
    if any(s in SKIP_NAMES for s in segments[:literal]) or not segments:
        return iter(())
    if not wc.is_magic("/".join(segments), flags=_GLOB_FLAGS):
        found = root.joinpath(*segments)
        return iter(["/".join(segments)] if found.is_file() and segments[-1] not in SKIP_NAMES else [])
    base = root.joinpath(*segments[:literal])
    if not base.is_dir():
        return iter(())
    if not base.resolve().is_relative_to(root.resolve()):
        # A symlinked directory leading elsewhere: the policy decided `root`, not where the link leads.
        raise ToolError("InvalidArguments", f"{'/'.join(segments[:literal])} leads outside path through a "
                                            "symlink; set path to it instead")
    named = matcher.ignored(base, is_dir=True)  # so is everything below it; the caller asked for it
    # Without `**` a pattern of N segments matches nothing deeper than N: no need to walk further.
    depth = None if any("**" in s for s in segments) else len(segments) - literal
    prefix = "".join(s + "/" for s in segments[:literal])
    rest = segments[literal:]
    # `**` alone (grep's default) matches every file: no glob to test.
    match = None if rest == ["**"] else wc.compile("/".join(rest), flags=_GLOB_FLAGS).match
    return (prefix + rel for rel in _walk(base, None if named else matcher, depth) if match is None or match(rel))


def _walk(top: Path, matcher: IgnoreMatcher | None, max_depth: int | None) -> Iterator[str]:
    """Files below `top` (posix, relative to it), in the sorted order of those paths; symlinked
    directories are not entered. A name that is not UTF-8 comes as Python decodes it (surrogates)."""
    yield from _visit(str(top), "", 0, matcher, max_depth)


def _visit(path: str, rel: str, depth: int, matcher: IgnoreMatcher | None, max_depth: int | None) -> Iterator[str]:
    try:
        with os.scandir(path) as it:
            entries = list(it)
    except OSError:  # gone, unreadable: as os.walk, skipped
        return
    spec, where = matcher.directory(Path(path)) if matcher is not None else (None, "")
    items = []
    for entry in entries:
        try:
            is_dir = entry.is_dir()
        except OSError:  # a symlink loop: a name, as os.walk lists it
            is_dir = False
        if is_dir and entry.name in SKIP_NAMES:
            continue
        if spec is not None and spec.match_file(where + entry.name + ("/" if is_dir else "")):
            continue
        # `d/` sorts where the paths below d do: the walk then yields in sorted order.
        items.append((entry.name + "/" if is_dir else entry.name, entry, is_dir))
    items.sort(key=lambda item: item[0])
    for _, entry, is_dir in items:
        if not is_dir:
            yield rel + entry.name
        elif not entry.is_symlink() and (max_depth is None or depth + 1 < max_depth):
            yield from _visit(entry.path, rel + entry.name + "/", depth + 1, matcher, max_depth)
