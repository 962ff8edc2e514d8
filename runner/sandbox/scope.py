"""A subagent's paths scope as the sandbox's mounts for that child's commands (runner/subagents/scope.py).

The run's layout, narrowed: the workspace read-only but for the scope's `write` entries (read-write); with `read`
given, the workspace an empty tmpfs but for the `read` and `write` entries. The runner's own read-only shields
(`.git`, the run directory, policy files) stay over what the entries show. Entries are directories and files; a glob
never reaches here (a child whose scope has one gets no `bash`). The layout is made again for each command, so an
entry made since the child started (a `write` directory it created with `write`) is mounted.

An entry with a symlink on its way (`out -> secrets`, which a repository may commit) is not mounted: bwrap would bind
what it leads to, which the file tools, deciding on resolved paths, refuse. A symlink below an entry needs nothing:
inside the sandbox it resolves in the child's view, where what the scope hides is not there.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from runner.sandbox.layout import Layout, LayoutInput, Mount, build_layout
from runner.sandbox.proxy import Decide
from runner.sandbox.runtime import Sandbox


def _inside(path: str, base: str) -> bool:
    return path == base or path.startswith(base.rstrip("/") + "/")


def scoped_layout(base: LayoutInput, read: tuple[str, ...] | None, write: tuple[str, ...]) -> Layout:
    """The run's layout (made from `base`) narrowed to the scope: `write` entries read-write, the rest of the
    workspace read-only; `read` (None: the whole workspace) read-only and everything else in the workspace hidden.
    An entry whose path holds a symlink is left out (see the module's docstring)."""
    ws = str(base.workspace)
    read = None if read is None else _unlinked(base.workspace, read)
    write = _unlinked(base.workspace, write)
    writable = [base.workspace / e for e in write]
    layout = build_layout(dataclasses.replace(
        base, workspace_writable=False,  # what the policy made writable inside the workspace is narrowed too
        writable=(*(p for p in base.writable if not _inside(str(p), ws)), *writable)))
    if read is None:
        return layout
    shown = [str(base.workspace / e) for e in (*read, *write)]
    mounts: list[Mount] = []
    for m in layout.mounts:
        if m.dest == ws and m.kind == "ro":
            mounts.append(Mount("tmpfs", ws))
            # Right after the workspace's mount: deeper shields (a protected path below an entry) still come later.
            mounts += [Mount("ro", p, p) for p in sorted(shown, key=lambda p: len(Path(p).parts))
                       if os.path.lexists(p)]
        elif m.kind == "ro" and _inside(m.dest, ws) and m.dest != ws and not any(_inside(m.dest, s) for s in shown):
            continue  # a shield over a path the scope hides: nothing to shield, and it would show it
        else:
            mounts.append(m)
    return Layout(mounts, layout.env, layout.chdir)


def _unlinked(workspace: Path, entries: tuple[str, ...]) -> tuple[str, ...]:
    """The entries that are where they are spelled: no symlink from the workspace down to them."""
    real = Path(os.path.realpath(workspace))
    return tuple(e for e in entries if Path(os.path.realpath(workspace / e)) == real / e)


class ScopedSandbox:
    """The run's sandbox, for one child whose profile has a paths scope (runner/tools/base.py Sandbox): its
    commands get `scoped_layout`, their network and proxy are the run's."""

    def __init__(self, run: Sandbox, read: tuple[str, ...] | None, write: tuple[str, ...]) -> None:
        self.run, self.read, self.write = run, read, write

    @property
    def active(self) -> bool:
        return self.run.active

    def _view(self) -> Sandbox:
        assert self.run.base is not None, "confines() let only an active sandbox with its layout input through"
        return dataclasses.replace(self.run, layout=scoped_layout(self.run.base, self.read, self.write))

    def wrap(self, argv: list[str], env: Mapping[str, str], *,
             caller: str | None = None) -> tuple[list[str], dict[str, str]]:
        return self._view().wrap(argv, env, caller=caller)

    def calling(self, decide: Decide | None) -> AbstractContextManager[str | None]:
        return self.run.calling(decide)

    def describe(self) -> dict[str, Any]:
        return self.run.describe()

    def read_only(self, path: Path) -> str | None:
        return self._view().read_only(path)


def confines(sandbox: Any) -> bool:
    """Whether a child's commands can be confined to a scope of its own under `sandbox` (a tool context's): the
    run's, active. Not a scoped child's: scopes are not combined in mounts, so its child with a scope gets no
    `bash`."""
    return isinstance(sandbox, Sandbox) and sandbox.active and sandbox.base is not None


def scoped(sandbox: Any, read: tuple[str, ...] | None, write: tuple[str, ...]) -> ScopedSandbox | None:
    """`sandbox` narrowed to a scope (`read`: None, the whole workspace), or None where `confines` says it cannot."""
    return ScopedSandbox(sandbox, read, write) if confines(sandbox) else None
