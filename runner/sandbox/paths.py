"""Extra sandbox paths from trusted configuration (`sandbox.readOnly` / `sandbox.writable`, the run's or an
MCP server's), resolved without letting the workspace's own symlinks choose what gets mounted.

A path the configuration writes relative to the workspace (or absolute but inside it) is walked one part
at a time. A symlink met on the way that lives in the workspace is workspace content, not configuration:
its target must stay in the workspace, else the whole path is refused — a config error, not a silent drop,
so the author sees that the mount they asked for is not what a committed `data -> /home/runner` would have
made it. A path outside the workspace is the trusted host's and resolves as it is.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from runner.policy.sandbox_config import SandboxConfigError


def extra_paths(raw: Iterable[str], workspace: Path, what: str) -> list[Path]:
    """Each path resolved. Raises SandboxConfigError (naming `what`, e.g. `sandbox.writable`) when a
    workspace symlink would take it out of the workspace."""
    return [extra_path(p, workspace, what) for p in raw]


def extra_path(raw: str, workspace: Path, what: str) -> Path:
    real_ws = Path(os.path.realpath(workspace))
    expanded = Path(os.path.expanduser(raw))
    if expanded.is_absolute():
        lexical = Path(os.path.normpath(expanded))
        for base in (Path(os.path.normpath(workspace)), real_ws):
            if lexical.is_relative_to(base):
                return _walk(real_ws, lexical.relative_to(base).parts, raw, what)
        return Path(os.path.realpath(expanded))
    return _walk(real_ws, expanded.parts, raw, what)


def _walk(real_ws: Path, parts: tuple[str, ...], raw: str, what: str) -> Path:
    # `cur` stays a real path (no symlink in it), so `..` means what the kernel would make of it.
    cur = real_ws
    for part in parts:
        if part in ("", "."):
            continue
        if part == "..":
            cur = cur.parent
            continue
        nxt = cur / part
        if not nxt.is_symlink():
            cur = nxt
            continue
        target = Path(os.path.realpath(nxt))
        if nxt.is_relative_to(real_ws) and not target.is_relative_to(real_ws):
            raise SandboxConfigError(f"{what}: {raw!r} is in the workspace, but {nxt} is a symlink out of it "
                                     f"(to {target}); refusing to mount it")
        cur = target
    return cur
