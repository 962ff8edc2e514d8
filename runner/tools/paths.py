"""Paths as the policy sees them. Resolution (`..`, symlinks) happens before
matching, so `../x` or a symlink leading out is an `fs:` target, never `workspace:`."""

from __future__ import annotations

from pathlib import Path

from runner.policy.model import Target
from runner.policy.targets import UnresolvablePath, path_target, resolve_path
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
    return [Target(domain, target(ctx, resolve(ctx, raw))) for raw in raw_paths]


def display(ctx: ToolContext, path: Path) -> str:
    """How a path is shown to the model: relative inside the workspace."""
    return path.relative_to(ctx.workspace).as_posix() or "." if path.is_relative_to(ctx.workspace) else str(path)


def check_writable(ctx: ToolContext, path: Path) -> None:
    """Hard limits no policy lifts (the run's own records, git's hooks and config)."""
    for guarded in ctx.protected:
        if path == guarded or path.is_relative_to(guarded):
            raise ToolError("PathTraversalBlocked", f"{display(ctx, path)} is protected: the runner never writes it")

