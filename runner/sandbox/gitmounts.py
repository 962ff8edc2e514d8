"""The sandbox's half of "what in `.git` is off limits" (runner/policy/gitdirs.py has the definition):
each `.git` and each gitdir or commondir one names that the layout would show writable is mounted
read-only, listed again for every sandboxed process, so a nested repository, a worktree or a `.git`
made by an earlier command is as read-only as the workspace's own `.git`."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from runner.policy.gitdirs import GitControl, git_control
from runner.sandbox.layout import Layout, Mount


def git_readonly(layout: Layout, workspace: Path, exists: Callable[[str], bool] = os.path.lexists,
                 is_symlink: Callable[[str], bool] = os.path.islink, control: GitControl | None = None) -> Layout:
    """`layout` with a read-only mount over each git control path that a writable mount shows. `control`:
    the workspace's git paths when the caller listed them already (a run's GitWalk); else they are listed here.

    Each goes right after the mount that shows it, so whatever the layout puts deeper (a sanitized file,
    a masked secret) still comes after it and wins. A symlink is never a mount source here: bwrap would
    mount what it points to, which may be a host path the sandbox must not show at all."""
    mounts = list(layout.mounts)
    control = git_control(workspace) if control is None else control
    for path in sorted(control.paths, key=lambda p: len(p.parts)):
        p = str(path)
        if is_symlink(p) or not exists(p):
            continue
        shown = [i for i, m in enumerate(mounts) if m.kind in ("ro", "rw", "tmpfs", "mask-file")
                 and (p == m.dest or p.startswith(m.dest.rstrip("/") + "/"))]
        if shown and mounts[shown[-1]].kind == "rw":
            mounts.insert(shown[-1] + 1, Mount("ro", p, p))
    if len(mounts) == len(layout.mounts):
        return layout
    return Layout(mounts, layout.env, layout.chdir)
