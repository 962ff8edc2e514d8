"""Paths as the policy sees them. Resolution (`..`, symlinks) happens before
matching, so `../x` or a symlink leading out is an `fs:` target, never `workspace:`."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from runner.policy.gitdirs import is_git_control
from runner.policy.model import Target
from runner.policy.targets import UnresolvablePath, case_insensitive, path_target, path_targets, resolve_path
from runner.tools.base import ToolContext, ToolError


def resolve(ctx: ToolContext, path: str) -> Path:
    if not isinstance(path, str) or not path or "\x00" in path:
        raise ToolError("InvalidArguments", f"invalid path {path!r}")
    try:
        return resolve_path(ctx.workspace, path)
    except UnresolvablePath as exc:
        raise ToolError("IOError", str(exc)) from None


def target(ctx: ToolContext, path: Path) -> str:
    return path_target(ctx.workspace, path)


def targets(ctx: ToolContext, domain: str, *raw_paths: str) -> list[Target]:
    """With a hard link's and, on a case-insensitive filesystem, the other spellings' (see path_targets)."""
    return escaped([t for raw in raw_paths for t in path_targets(domain, ctx.workspace, resolve(ctx, raw))])


def escaped(found: list[Target]) -> list[Target]:
    """Targets as the policy can match them: a name that is not UTF-8 spelled as `escape` shows it (the
    matchers encode their text as UTF-8, and would fail on it)."""
    return [replace(t, target=escape(t.target)) if _SURROGATE.search(t.target) else t for t in found]


def display(ctx: ToolContext, path: Path) -> str:
    """How a path is shown to the model: relative inside the workspace, escaped (see `escape`)."""
    return escape(path.relative_to(ctx.workspace).as_posix() or "." if path.is_relative_to(ctx.workspace)
                  else str(path))


_SURROGATE = re.compile("[\ud800-\udfff]")


def escape(name: str) -> str:
    """A file name that is not UTF-8 (a byte Python decoded as a lone surrogate, `\\udcff`) shown as
    `\\xff`: such text cannot be encoded for the model or the event log, and must not end the run."""
    return _SURROGATE.sub(_escaped, name) if _SURROGATE.search(name) else name


def _escaped(m: re.Match[str]) -> str:
    code = ord(m.group())
    return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"


def check_writable(ctx: ToolContext, path: Path) -> None:
    """Hard limits no policy lifts (the run's own records, what git reads as its own)."""
    # Where the filesystem ignores case, `.GIT/config` is `.git/config`.
    fold = case_insensitive(ctx.workspace)
    if is_git_control(ctx.workspace, path, fold=fold):
        raise ToolError("PathTraversalBlocked", f"{display(ctx, path)} is git's own (a .git path, or a gitdir a "
                        ".git file names): the runner never writes it")
    seen = Path(str(path).casefold()) if fold else path
    for guarded in ctx.protected:
        guarded = Path(str(guarded).casefold()) if fold else guarded
        if seen == guarded or seen.is_relative_to(guarded):
            raise ToolError("PathTraversalBlocked", f"{display(ctx, path)} is protected: the runner never writes it")

