"""changes.patch: the workspace diff the agent produced.

In a git work tree the base is the tree as it was when the run started
(`git stash create` captures a dirty start without touching anything), so
changes the user already had are not blamed on the agent; files new since the
start are added as diffs from /dev/null; files new since the start that ignore rules (`.gitignore` at any
level, `.git/info/exclude`) would hide are recorded apart (`ignored()`: summary `ignored_new_files`,
`ignored.patch`), since a `.gitignore` the agent wrote must not hide a payload. Elsewhere, every file an edit-domain
call touched (write, edit, delete, move, shell redirections) is snapshotted before
its first change and diffed at the end.
"""

from __future__ import annotations

import difflib
import subprocess
from pathlib import Path

from runner.report.ignored import IgnoredFiles, ignored_new
from runner.workspace.git import SafeGit

MAX_SNAPSHOT_BYTES = 2 * 1024 * 1024


class ChangeTracker:
    def __init__(self, workspace: Path, git: SafeGit | None = None, exclude: tuple[str, ...] = ()) -> None:
        """`exclude`: workspace-relative paths that are the runner's own (a runs dir inside the workspace), never
        listed as ignored new files (`.agent-run/`, which holds the worktrees, never is)."""
        self.workspace = workspace
        self._git_run = git or SafeGit(workspace)
        self.base: str | None = None
        self.head: str | None = None  # the commit HEAD named at the start (base is it, or a stash of the changes)
        self.untracked_at_start: set[str] = set()
        self.ignored_at_start: set[str] = set()
        self.exclude = (".agent-run", *exclude)
        self.originals: dict[Path, bytes | None] = {}  # None: the file did not exist
        try:
            inside = self._git_run.repo is not None and self._git(
                "rev-parse", "--is-inside-work-tree").stdout.strip() == "true"
            head = self._git("rev-parse", "--verify", "-q", "HEAD").stdout.strip() if inside else ""
        except (OSError, subprocess.SubprocessError):
            inside, head = False, ""
        if inside and head:
            stash = self._git("stash", "create").stdout.strip()
            self.base, self.head = stash or head, head
            self._git_run.seal(self.base)
            self.untracked_at_start = set(self._untracked())
            self.ignored_at_start = set(self._ignored())

    def _git(self, *args: str) -> subprocess.CompletedProcess[str]:
        return self._git_run(*args)

    def close(self) -> None:
        self._git_run.close()

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
            # setdefault: child agents running at once may both see the file first; the earlier copy stays.
            try:
                self.originals.setdefault(path, path.read_bytes() if path.stat().st_size <= MAX_SNAPSHOT_BYTES else b"")
            except FileNotFoundError:
                self.originals.setdefault(path, None)
            except OSError:
                continue

    def patch(self) -> tuple[str, list[str]]:
        """The unified diff and the changed paths (workspace-relative where possible)."""
        return self._git_patch() if self.git else self._snapshot_patch()

    def _untracked(self) -> list[str]:
        out = self._git("ls-files", "--others", "--exclude-standard", "-z").stdout
        return [p for p in out.split("\0") if p and not p.startswith(".agent-run/")]

    def _ignored(self) -> list[str]:
        spec = ["--", ".", *(f":(exclude,literal){p}" for p in self.exclude)]
        out = self._git("ls-files", "--others", "--ignored", "--exclude-standard", "-z", *spec).stdout
        return [p for p in out.split("\0") if p]

    def ignored(self) -> IgnoredFiles | None:
        """The files ignore rules would hide that are new since the start, their entries (a wholly new directory
        as one `dir/`) and their patch; None outside a git work tree (no ignore rules to get around)."""
        if not self.git:
            return None
        new = sorted(set(self._ignored()) - self.ignored_at_start)
        present = [*self.exclude, *self.ignored_at_start, *self.untracked_at_start, *self._untracked(),
                   *(p for p in self._git("ls-files", "-z").stdout.split("\0") if p)]
        return ignored_new(new, present, self._git_run, self.workspace)

    def _git_patch(self) -> tuple[str, list[str]]:
        assert self.base is not None
        spec = ("--", ".", ":(exclude).agent-run")
        # --relative: in a workspace below its repository's top (a monorepo package), names from the workspace, as
        # `ls-files` already gives them and as workspace.json and a resume's `git apply` expect
        flags = ("--no-ext-diff", "--no-textconv", "--ignore-submodules=dirty", "--relative")
        diff = self._git("diff", "--binary", *flags, self.base, *spec).stdout
        names = self._git("diff", "--name-only", *flags, self.base, *spec).stdout
        changed = [n for n in names.splitlines() if n]
        for rel in sorted(set(self._untracked()) - self.untracked_at_start):
            extra = self._git("diff", "--no-index", "--binary", "--no-ext-diff", "--no-textconv", "--", "/dev/null",
                              rel).stdout
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
