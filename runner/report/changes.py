"""changes.patch: the workspace diff the agent produced.

In a git work tree the base is the tree as it was when the run started
(`git stash create` captures a dirty start without touching anything), so
changes the user already had are not blamed on the agent; files new since the
start are added as diffs from /dev/null. Elsewhere, every file an edit-domain
call touched (write, edit, delete, move, shell redirections) is snapshotted before
its first change and diffed at the end.
"""

from __future__ import annotations

import difflib
import subprocess
from pathlib import Path

MAX_SNAPSHOT_BYTES = 2 * 1024 * 1024


def _git(workspace: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-c", "core.quotepath=off", *args], cwd=workspace, capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=60)


class ChangeTracker:
    def __init__(self, workspace: Path) -> None:
        self.workspace = workspace
        self.base: str | None = None
        self.untracked_at_start: set[str] = set()
        self.originals: dict[Path, bytes | None] = {}  # None: the file did not exist
        try:
            inside = _git(workspace, "rev-parse", "--is-inside-work-tree").stdout.strip() == "true"
            head = _git(workspace, "rev-parse", "--verify", "-q", "HEAD").stdout.strip() if inside else ""
        except (OSError, subprocess.SubprocessError):
            inside, head = False, ""
        if inside and head:
            stash = _git(workspace, "stash", "create").stdout.strip()
            self.base = stash or head
            self.untracked_at_start = set(self._untracked())

    @property
    def git(self) -> bool:
        return self.base is not None

    def before_edit(self, paths: list[Path]) -> None:
        """Called before an edit-domain call runs: keep the first version of each file."""
        if self.git:
            return
        for path in paths:
            if path in self.originals:
                continue
            try:
                self.originals[path] = path.read_bytes() if path.stat().st_size <= MAX_SNAPSHOT_BYTES else b""
            except FileNotFoundError:
                self.originals[path] = None
            except OSError:
                continue

    def patch(self) -> tuple[str, list[str]]:
        """The unified diff and the changed paths (workspace-relative where possible)."""
        return self._git_patch() if self.git else self._snapshot_patch()

    def _untracked(self) -> list[str]:
        out = _git(self.workspace, "ls-files", "--others", "--exclude-standard", "-z").stdout
        return [p for p in out.split("\0") if p and not p.startswith(".agent-run/")]

    def _git_patch(self) -> tuple[str, list[str]]:
        assert self.base is not None
        diff = _git(self.workspace, "diff", "--binary", self.base, "--", ".", ":(exclude).agent-run").stdout
        names = _git(self.workspace, "diff", "--name-only", self.base, "--", ".", ":(exclude).agent-run").stdout
        changed = [n for n in names.splitlines() if n]
        for rel in sorted(set(self._untracked()) - self.untracked_at_start):
            extra = _git(self.workspace, "diff", "--no-index", "--binary", "--", "/dev/null", rel).stdout
            diff += extra
            changed.append(rel)
        return diff, changed

    def _snapshot_patch(self) -> tuple[str, list[str]]:
        chunks, changed = [], []
        for path, before in sorted(self.originals.items()):
            try:
                after: bytes | None = path.read_bytes()
            except FileNotFoundError:
                after = None
            except OSError:
                continue
            if after == before:
                continue
            name = path.relative_to(self.workspace).as_posix() if path.is_relative_to(self.workspace) else str(path)
            changed.append(name)
            old = (before or b"").decode("utf-8", "replace").splitlines(keepends=True)
            new = (after or b"").decode("utf-8", "replace").splitlines(keepends=True)
            chunks.append("".join(difflib.unified_diff(old, new, "/dev/null" if before is None else f"a/{name}",
                                                       "/dev/null" if after is None else f"b/{name}")))
        return "".join(chunks), changed
