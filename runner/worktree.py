"""A private copy of a git workspace for one run (`--isolate worktree`, `batch -j N`).

`WORKSPACE/.agent-run/worktrees/<name>` is a local clone of the repository (objects hard-linked,
so it costs little), checked out at the workspace's HEAD, with the workspace's uncommitted changes
to tracked files applied on top. It is a clone rather than `git worktree add` on purpose: nothing
is written into the workspace's `.git`, the clone has a config of its own (no filter, hook or
fsmonitor the workspace's config names can run), and it is self-contained, so the sandbox needs
to show nothing outside it. Untracked files are not copied. Two runs in two worktrees never see
each other's changes; each run's `changes.patch` is its own.

Worktrees are kept after the run (its workspace, for `resume`); `agent-run cleanup` removes old ones.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from runner.report.git import HARDENING, SafeGit, find_repo, isolated_env

WORKTREES = Path(".agent-run") / "worktrees"


class WorktreeError(Exception):
    pass


def worktrees_dir(workspace: Path) -> Path:
    repo = find_repo(workspace)
    return (repo.top if repo else workspace) / WORKTREES


def create_worktree(workspace: Path, name: str) -> Path:
    """The workspace's counterpart inside a new worktree (the same subdirectory, if the workspace is one)."""
    repo = find_repo(workspace)
    if repo is None:
        raise WorktreeError(f"{workspace} is not in a git work tree: a worktree needs git (pass --shared-workspace "
                            "to run in it as it is)")
    source = SafeGit(workspace)
    try:
        head = source("rev-parse", "--verify", "-q", "HEAD").stdout.strip()
        if not head:
            raise WorktreeError(f"{repo.top} has no commit yet: a worktree starts from HEAD")
        dirty = source("diff", "--binary", "--no-ext-diff", "--no-textconv", "HEAD", "--", ".",
                       ":(exclude).agent-run").stdout
    finally:
        source.close()
    dest = repo.top / WORKTREES / name
    dest.parent.mkdir(parents=True, exist_ok=True)
    ignore = repo.top / ".agent-run" / ".gitignore"
    if not ignore.exists():
        ignore.write_text("*\n", encoding="utf-8")
    with tempfile.TemporaryDirectory(prefix="agent-run-wt-") as home:
        env = isolated_env(home)

        def git(*args: str, cwd: Path = dest, stdin: str | None = None) -> None:
            try:
                done = subprocess.run(["git", *HARDENING, *args], cwd=cwd, env=env, input=stdin, capture_output=True,
                                      text=True, timeout=300)
            except (OSError, subprocess.SubprocessError) as exc:  # no git, or one that hangs: a refusal, not a crash
                raise WorktreeError(f"git {args[0]} failed: {exc}") from None
            if done.returncode != 0:
                raise WorktreeError(f"git {args[0]} failed: {done.stderr.strip()[-500:]}")

        links = ("--no-hardlinks",) if _cross_device(repo.common_dir, dest.parent) else ()
        git("-c", "protocol.file.allow=always", "clone", "--quiet", "--local", "--no-checkout", *links, str(repo.top),
            str(dest), cwd=dest.parent)
        git("checkout", "--quiet", "--detach", head)
        if dirty:
            git("apply", "--binary", "--whitespace=nowarn", "-", stdin=dirty)
    return dest / workspace.resolve().relative_to(repo.top)


def _cross_device(a: Path, b: Path) -> bool:
    try:
        return os.stat(a).st_dev != os.stat(b).st_dev
    except OSError:
        return True


def remove_older_worktrees(workspace: Path, max_age_s: float, *, dry_run: bool = False) -> list[Path]:
    """Worktrees not touched for max_age_s (`agent-run cleanup`)."""
    root = worktrees_dir(workspace)
    cutoff = time.time() - max_age_s
    removed = []
    for tree in sorted(root.iterdir()) if root.is_dir() else []:
        try:
            old = tree.stat().st_mtime < cutoff
        except OSError:
            continue
        if old:
            if not dry_run:
                shutil.rmtree(tree, ignore_errors=True)
            removed.append(tree)
    return removed
