"""runner/sandbox/gitwalk.py: a run's walk for `.git` paths lists again only the directories that changed, and
finds exactly what `git_control` finds, whatever changed and however (mtime reset, in-place edits, symlinks)."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from runner.policy.gitdirs import git_control
from runner.policy.sandbox_config import SandboxConfig
from runner.sandbox.gitwalk import RACY_NS, GitWalk
from runner.sandbox.runtime import open_sandbox
from tests.fakes.wait import until

LATER = RACY_NS + 10**9  # a clock this far ahead: every ctime is settled, nothing is listed again for being recent


def _tree(ws: Path, outside: Path) -> int:
    """A workspace with a repository, a nested one, a worktree's `.git` file and a symlinked directory whose
    target holds a `.git` (never followed). Returns how many directories a walk lists."""
    for d in ("a/b/c", "a/d", "nested/src", "wt", "e"):
        (ws / d).mkdir(parents=True)
    (ws / ".git").mkdir()
    (ws / "nested" / ".git").mkdir()
    (outside / "gitdir").mkdir(parents=True)
    (outside / "other" / ".git").mkdir(parents=True)
    (ws / "wt" / ".git").write_text(f"gitdir: {outside / 'gitdir'}\n")
    (ws / "link").symlink_to(outside / "other")
    return 9  # ws, a, a/b, a/b/c, a/d, nested, nested/src, wt, e


def _settled(ws: Path, scratch: Path) -> None:
    """Waits until the filesystem's coarse clock has moved past every ctime in `ws`, so that a change made now
    gets a newer ctime (what the walk's racy window guarantees a real run; the test's clock skips it)."""
    newest = max(os.lstat(root).st_ctime_ns for root, _dirs, _files in os.walk(ws))
    probe = scratch / "tick"

    def moved() -> bool:
        probe.write_text("x")
        return os.lstat(probe).st_ctime_ns > newest

    until(moved, "the filesystem clock to tick")


def test_only_what_changed_is_listed_again_and_the_result_is_git_controls(tmp_path: Path) -> None:
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    ws.mkdir()
    dirs = _tree(ws, outside)
    walk = GitWalk(ws, now_ns=lambda: time.time_ns() + LATER)
    assert walk.control() == git_control(ws) and walk.listed == dirs
    assert walk.control() == git_control(ws) and walk.listed == 0

    _settled(ws, tmp_path)
    (ws / "a" / "b" / "c" / ".git").mkdir()  # a `.git` made deep down, its directory's mtime set back
    old = os.lstat(ws / "a" / "d")
    os.utime(ws / "a" / "b" / "c", ns=(old.st_atime_ns, old.st_mtime_ns))
    control = walk.control()
    assert ws / "a" / "b" / "c" / ".git" in control.entries and control == git_control(ws)
    assert walk.listed == 1  # a/b/c: its ctime moved, which nothing sets back

    _settled(ws, tmp_path)
    (outside / "elsewhere").mkdir()  # a `.git` file pointed elsewhere, edited in place: read at every walk
    with open(ws / "wt" / ".git", "r+") as f:
        f.write(f"gitdir: {outside / 'elsewhere'}\n")
    control = walk.control()
    assert outside / "elsewhere" in control.gitdirs and control == git_control(ws) and walk.listed == 0

    _settled(ws, tmp_path)
    subprocess.run(["rm", "-rf", str(ws / "a" / "b")], check=True)  # a directory replaced by a symlink
    (ws / "a" / "b").symlink_to(outside / "other")
    control = walk.control()
    assert control == git_control(ws) and not any("other" in str(p) for p in control.paths)
    assert walk.listed == 1  # a


def test_a_directory_changed_too_recently_to_tell_is_listed_again(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    walk = GitWalk(ws)  # the real clock: the tree was just made, so each directory's ctime is recent
    walk.control()
    walk.control()
    assert walk.listed == 2
    (ws / "sub" / ".git").mkdir()  # likely within the same clock tick as the listing: found all the same
    assert walk.control() == git_control(ws)


@pytest.mark.usefixtures("sandbox_available")
def test_the_sandbox_mounts_a_git_made_since_its_last_walk_read_only(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "deep" / "er").mkdir(parents=True)
    box = open_sandbox(SandboxConfig(mode="required", network="none"), workspace=ws, protected=[], readable=[],
                       writable=[], environ=os.environ)
    try:
        assert box.gitwalk is not None
        box.gitwalk = GitWalk(ws, now_ns=lambda: time.time_ns() + LATER)

        def sh(script: str) -> str:
            argv, env = box.wrap(["bash", "-c", script], {"PATH": os.environ.get("PATH", "/usr/bin:/bin")})
            return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=30,
                                  stdin=subprocess.DEVNULL).stdout.strip()

        assert sh("echo ok") == "ok"
        _settled(ws, tmp_path)
        assert sh("mkdir deep/er/.git && echo one > deep/er/.git/config && echo made") == "made"
        assert sh("echo two >> deep/er/.git/config && echo wrote || echo refused") == "refused"
        assert box.gitwalk.listed == 1  # deep/er alone: the only directory that changed
    finally:
        box.close()
    assert (ws / "deep" / "er" / ".git" / "config").read_text() == "one\n"
