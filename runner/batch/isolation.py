"""How a batch's tasks share the workspace, decided before any task starts (so a refusal runs nothing):
each in a worktree of its own, all in the workspace at once, or one after another in it (docs/batch.md)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from runner.workspace.git import SafeGit, find_repo


class Refusal(str):
    """Why the batch will not start (exit 2)."""


def decide_isolation(home: Path, jobs: int, isolate: str | None, shared: bool) -> str | Refusal:
    """How the tasks share the workspace: "worktree" (each its own), "shared" (all in it at once) or
    "none" (one after another in it). Decided before any task starts, so a refusal runs nothing."""
    if not home.is_dir():
        return Refusal(f"workspace {home} is not a directory")
    if isolate and shared:
        return Refusal("--isolate worktree and --shared-workspace contradict each other: choose one")
    if shared:
        return "shared"
    if isolate is None and jobs == 1:
        return "none"
    problem = worktree_problem(home)
    if problem is None:
        return "worktree"
    if isolate:
        return Refusal(f"--isolate worktree: {problem}")
    return Refusal(f"-j {jobs} runs tasks at once, each in its own worktree, but {problem}. Pass "
                    "--shared-workspace to run them all in the workspace itself (each run then lists the "
                    "others' changes as its own), or -j 1 to run them one after another")


def worktree_problem(home: Path) -> str | None:
    """Why no worktree can be made of this workspace (a worktree would fail in every task), else None."""
    repo = find_repo(home)
    if repo is None:
        return f"{home} is not in a git work tree"
    git = SafeGit(home)
    try:
        head = git("rev-parse", "--verify", "-q", "HEAD").stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        return f"git could not read {repo.top} ({exc})"
    finally:
        git.close()
    return None if head else f"{repo.top} has no commit yet (a worktree starts from HEAD)"
