"""Locks of `resume` through the real CLI (runner/sessions/resume.py, runner/record/lock.py): a `.lock` that is
not a lock file refuses the resume, and the locks are held before the workspace is checked or changed."""

from __future__ import annotations

import contextlib
import fcntl
import os
import subprocess
from pathlib import Path

from runner.record.lock import acquire
from tests.fakes.openai_server import reply


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd, check=True)


def _planted(lock: Path, kind: str) -> None:
    if kind == "directory":
        lock.mkdir()
    elif kind == "fifo":
        os.mkfifo(lock)
    else:
        lock.symlink_to("elsewhere")


def test_a_lock_that_is_not_a_regular_file_refuses_the_resume(fake, workspace, agent_run):
    fake.add(reply("done"))
    first = agent_run("task.md")
    assert first.code == 0
    lock = first.run_dir / ".lock"
    for kind in ("directory", "fifo", "symlink"):
        _planted(lock, kind)
        # A FIFO must not hang the resume: agent_run's timeout bounds it (a hang, not a timing assertion).
        refused = agent_run("resume", str(first.run_dir), timeout=60)
        assert refused.code == 2, (kind, refused.stderr)
        assert str(lock) in refused.stderr and "nothing was started" in refused.stderr, refused.stderr
        assert refused.new_dirs == []  # nothing started
        with contextlib.suppress(OSError):
            lock.rmdir()
        with contextlib.suppress(OSError):
            lock.unlink()
    assert (first.run_dir / "summary.json").is_file() and len(fake.requests) == 1


def _edited(fake, workspace: Path, agent_run) -> Path:
    """A git workspace at the base of a run that rewrote notes.txt: what --apply-changes would change."""
    (workspace / "notes.txt").write_text("v1\n")
    _git(workspace, "init", "-q")
    _git(workspace, "add", "notes.txt", "task.md")
    _git(workspace, "commit", "-qm", "base")
    fake.add(reply(calls=[("read", {"path": "notes.txt"}),
                          ("write", {"path": "notes.txt", "content": "v2 by the agent\n"})]))
    first = agent_run("--max-turns", "1", "task.md")
    assert first.code == 5 and "notes.txt" in (first.run_dir / "changes.patch").read_text()
    _git(workspace, "checkout", "-q", "notes.txt")  # a fresh checkout of the base
    return first.run_dir


def test_the_locks_are_held_before_changes_are_applied_shared_workspace_or_not(fake, workspace, agent_run):
    edited = _edited(fake, workspace, agent_run)
    fd = os.open(workspace, os.O_RDONLY | os.O_DIRECTORY)  # another run in the workspace, as runs lock it
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        busy = agent_run("resume", str(edited), "--apply-changes")
        replay = agent_run("replay", str(edited), "--approve", "--apply-changes")  # the same locks first
    finally:
        os.close(fd)
    for refused in (busy, replay):
        assert refused.code == 2 and "in use" in refused.stderr, refused.stderr
        assert refused.new_dirs == []
    assert (workspace / "notes.txt").read_text() == "v1\n"  # nothing applied before the refusal

    # --shared-workspace waives the workspace's lock, never the lock of the run it continues.
    held = acquire(edited, "run held by the test")  # a concurrent resume of the same run, as resumes lock it
    try:
        busy = agent_run("resume", str(edited), "--apply-changes", "--shared-workspace")
    finally:
        held.release()
    assert busy.code == 2 and f"pid {os.getpid()}" in busy.stderr, busy.stderr
    assert busy.new_dirs == []
    assert (workspace / "notes.txt").read_text() == "v1\n"
    fake.add(reply("continued"))
    resumed = agent_run("resume", str(edited), "--apply-changes", "--shared-workspace")
    assert resumed.code == 0, resumed.stderr
    assert (workspace / "notes.txt").read_text() == "v2 by the agent\n"
    assert resumed.summary["resumed_from"]["run_id"] == edited.name
    assert any(e["type"] == "run_finished" for e in resumed.events)
