"""Worktrees: never through a symlink, never one a run holds, never the workspace's git config."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from runner.workspace.git import GitError, isolated_env, run_git
from runner.workspace.worktree import WorktreeError, create_worktree, in_use, remove_older_worktrees
from tests.fakes.openai_server import reply

GIT_ID = ("-c", "user.email=ci@example.com", "-c", "user.name=CI")
OLD = time.time() - 30 * 86400


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *GIT_ID, *args], cwd=repo, check=True, capture_output=True, text=True).stdout


def _repo(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "a.txt").write_text("base\n")
    _git(path, "init", "-q")
    _git(path, "add", "a.txt")
    _git(path, "commit", "-q", "-m", "base")
    return path


def _victim(path: Path) -> Path:
    """A directory outside the runner's own that must survive: children old enough to look removable."""
    (path / "precious").mkdir(parents=True)
    (path / "precious" / "file").write_text("keep\n")
    os.utime(path / "precious", (OLD, OLD))
    return path


def _old_worktree(repo: Path, name: str) -> Path:
    tree = repo / ".agent-run" / "worktrees" / name
    (tree / "sub").mkdir(parents=True)
    (tree / "sub" / "f").write_text("x\n")
    os.utime(tree, (OLD, OLD))
    return tree


# create_worktree refuses to write through a symlink


@pytest.mark.parametrize("where", [".agent-run", ".agent-run/worktrees"])
def test_create_refuses_a_symlinked_agent_run_or_worktrees_dir(tmp_path, where):
    repo = _repo(tmp_path / "repo")
    target = tmp_path / "elsewhere"
    target.mkdir()
    (repo / where).parent.mkdir(parents=True, exist_ok=True)
    (repo / where).symlink_to(target)
    with pytest.raises(WorktreeError, match="symlink"):
        create_worktree(repo, "r1")
    assert list(target.iterdir()) == []


def test_create_refuses_a_dangling_gitignore_symlink(tmp_path):
    repo = _repo(tmp_path / "repo")
    (repo / ".agent-run").mkdir()
    made = tmp_path / "made-by-the-runner"
    (repo / ".agent-run" / ".gitignore").symlink_to(made)
    with pytest.raises(WorktreeError, match="symlink"):
        create_worktree(repo, "r1")
    assert not made.exists()


def test_create_carries_staged_and_unstaged_changes_and_ignores_itself(tmp_path):
    repo = _repo(tmp_path / "repo")
    (repo / "a.txt").write_text("staged\n")
    _git(repo, "add", "a.txt")
    (repo / "a.txt").write_text("staged\nand not\n")
    tree = create_worktree(repo, "r1")
    assert tree == repo / ".agent-run" / "worktrees" / "r1"
    assert (tree / "a.txt").read_text() == "staged\nand not\n"
    assert (repo / ".agent-run" / ".gitignore").read_text() == "*\n"
    assert not (tree / ".git" / "objects" / "info" / "alternates").exists()  # self-contained
    assert _git(tree, "log", "--format=%s") == "base\n"


def test_a_missing_git_is_a_worktree_error_and_leaves_nothing(tmp_path, monkeypatch):
    repo = _repo(tmp_path / "repo")
    (tmp_path / "nobin").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "nobin"))
    with pytest.raises(WorktreeError, match="git"):
        create_worktree(repo, "r1")
    assert list((repo / ".agent-run" / "worktrees").iterdir()) == []


def test_run_git_maps_a_hang_and_a_failure(tmp_path):
    fake = tmp_path / "bin" / "git"
    fake.parent.mkdir()
    fake.write_text(f"#!/bin/sh\nexec {shutil.which('sleep')} 60\n")  # far past the timeout: only the timeout ends it
    fake.chmod(0o755)
    env = isolated_env(str(tmp_path))
    env["PATH"] = str(fake.parent)
    with pytest.raises(GitError, match="git status failed") as hung:
        run_git("status", env=env, cwd=tmp_path, timeout=0.3)
    assert hung.value.returncode is None
    with pytest.raises(GitError, match="git rev-parse failed") as failed:
        run_git("-C", str(tmp_path), "rev-parse", "HEAD", env=isolated_env(str(tmp_path)), cwd=tmp_path)
    assert failed.value.returncode == 128 and failed.value.stderr


# cleanup never follows a symlink, never removes what a run holds, lists only what went


@pytest.mark.parametrize("where", [".agent-run", ".agent-run/worktrees"])
def test_cleanup_never_follows_a_symlinked_dir(tmp_path, where):
    repo = _repo(tmp_path / "repo")
    victim = _victim(tmp_path / "home")
    (repo / where).parent.mkdir(parents=True, exist_ok=True)
    (repo / where).symlink_to(victim if where.endswith("worktrees") else tmp_path / "agent-run-elsewhere")
    if where == ".agent-run":
        (tmp_path / "agent-run-elsewhere").mkdir()
        (tmp_path / "agent-run-elsewhere" / "worktrees").symlink_to(victim)
    assert remove_older_worktrees(repo, 0) == []
    assert (victim / "precious" / "file").read_text() == "keep\n"


def test_cleanup_leaves_a_symlink_among_the_worktrees_and_its_target(tmp_path):
    repo = _repo(tmp_path / "repo")
    victim = _victim(tmp_path / "home")
    tree = _old_worktree(repo, "old")
    (tree.parent / "link").symlink_to(victim / "precious")
    os.utime(tree.parent / "link", (OLD, OLD), follow_symlinks=False)
    assert remove_older_worktrees(repo, 86400) == [tree]
    assert not tree.exists() and (tree.parent / "link").is_symlink()
    assert (victim / "precious" / "file").read_text() == "keep\n"


@pytest.mark.parametrize("locked", ["", "sub"])
def test_cleanup_skips_a_worktree_a_run_holds(tmp_path, locked):
    """A run locks its workspace directory (the worktree, or a subdirectory of it) as runner/record/lock.py does."""
    repo = _repo(tmp_path / "repo")
    held, free = _old_worktree(repo, "held"), _old_worktree(repo, "free")
    fd = os.open(held / locked, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        assert in_use(held) and not in_use(free)
        assert remove_older_worktrees(repo, 86400, dry_run=True) == [free]
        assert remove_older_worktrees(repo, 86400) == [free]
        assert held.is_dir() and not free.exists()
    finally:
        os.close(fd)
    assert not in_use(held)
    assert remove_older_worktrees(repo, 86400) == [held]


def test_cleanup_lists_only_what_it_removed(tmp_path, monkeypatch):
    repo = _repo(tmp_path / "repo")
    tree = _old_worktree(repo, "old")
    monkeypatch.setattr("runner.workspace.worktree.shutil.rmtree", lambda *a, **k: None)
    assert remove_older_worktrees(repo, 86400) == []
    assert tree.is_dir()


# the workspace's .git/config never runs


def test_a_worktree_run_never_runs_the_workspaces_filters_or_fsmonitor(fake, workspace, agent_run, tmp_path):
    marker = tmp_path / "pwned"
    (workspace / ".gitattributes").write_text("* filter=evil\n")
    (workspace / "a.txt").write_text("base\n")
    _git(workspace, "init", "-q")
    _git(workspace, "add", ".gitattributes", "a.txt")
    _git(workspace, "commit", "-q", "-m", "base")
    monitor = tmp_path / "fsmonitor.sh"
    monitor.write_text(f"#!/bin/sh\ntouch {marker}.fsmonitor\n")
    monitor.chmod(0o755)
    # From here on no git may run on the workspace with its own config: this one names code to run.
    with (workspace / ".git" / "config").open("a") as config:
        config.write(f"[filter \"evil\"]\n\tclean = touch {marker}.clean; cat\n\tsmudge = touch {marker}.smudge; cat\n"
                     f"\trequired = true\n[core]\n\tfsmonitor = {monitor}\n")
    (workspace / "a.txt").write_text("base\nuncommitted\n")
    fake.add(reply("done"))
    r = agent_run("run", "task.md", "--isolate", "worktree")
    assert r.code == 0, r.stdout + r.stderr
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("pwned")) == []
    trees = list((workspace / ".agent-run" / "worktrees").iterdir())
    assert len(trees) == 1 and (trees[0] / "a.txt").read_text() == "base\nuncommitted\n"
