from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Any

from runner.policy.gitdirs import git_control
from runner.policy.model import Target
from runner.tools import paths
from runner.tools.base import Tool, ToolContext, ToolError, ToolOutput


class Delete(Tool):
    name = "delete"
    domain = "edit"
    risk = "high"
    context_class = "protected"
    description = (
        "Delete a file, symlink (not its target) or empty directory."
    )
    schema = {
        "type": "object",
        "properties": {"path": {"type": "string"}},
        "required": ["path"],
        "additionalProperties": False,
    }

    def targets(self, args: dict[str, Any], ctx: ToolContext) -> list[Target]:
        return [Target(self.domain, paths.target(ctx, entry(ctx, args["path"])))]

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        path = entry(ctx, args["path"])
        check_changeable(ctx, path)
        shown = paths.display(ctx, path)
        try:
            mode = path.lstat().st_mode
        except FileNotFoundError:
            raise ToolError("IOError", f"{shown} does not exist") from None
        except OSError as exc:
            raise ToolError("IOError", f"cannot delete {shown}: {exc.strerror or exc}") from None
        kind = "directory" if stat.S_ISDIR(mode) else "symlink" if stat.S_ISLNK(mode) else "file"
        try:
            if kind == "directory":
                path.rmdir()
            else:
                path.unlink()
        except OSError as exc:
            if exc.errno in (errno.ENOTEMPTY, errno.EEXIST):
                n = _count(path)
                count = f" ({n} entries)" if n is not None else ""
                raise ToolError("IOError", f"{shown}/ is not empty{count}; delete the files in it first",
                                entries=n) from None
            raise ToolError("IOError", f"cannot delete {shown}: {exc.strerror or exc}") from None
        return ToolOutput(f"deleted {kind} {shown}{'/' if kind == 'directory' else ''}", {"kind": kind})


def entry(ctx: ToolContext, raw: str) -> Path:
    """The path itself, its last component unresolved: deleting or moving a symlink acts on the link,
    not on what it points to. Everything before the last component is resolved like any path."""
    full = paths.resolve(ctx, raw)  # validates `raw`
    p = Path(os.path.expanduser(raw))
    if p.name in ("", ".", ".."):
        return full
    parent = p.parent if p.is_absolute() else ctx.workspace / p.parent
    # Absolute, so resolve() expands no `~` a directory name happens to start with.
    return paths.resolve(ctx, str(parent)) / p.name


def check_changeable(ctx: ToolContext, path: Path) -> None:
    """The hard limits for a path deleted, moved or replaced: never a protected path, never one that
    holds a protected path or git's own (moving `sub` would carry `sub/.git` along), never the workspace itself."""
    paths.check_writable(ctx, path)
    for guarded in (*ctx.protected, *git_control(ctx.workspace).paths):
        if guarded.is_relative_to(path):
            raise ToolError("PathTraversalBlocked",
                            f"{paths.display(ctx, path)} holds {paths.display(ctx, guarded)}, which is protected")
    if ctx.workspace.is_relative_to(path):
        raise ToolError("PathTraversalBlocked", f"{paths.display(ctx, path)} is or holds the workspace itself")


def _count(directory: Path) -> int | None:
    try:
        with os.scandir(directory) as it:
            return sum(1 for _ in it)
    except OSError:
        return None
