"""workspace/state.py and record/lock.py against what an agent (or a crafted run directory) can leave behind:
nothing there may hang the run, be followed out of its place, or be written through."""

from __future__ import annotations

import json
import os

import pytest

from runner.record.lock import LockUnusable, acquire, is_locked
from runner.workspace.state import WorkspaceMismatch, check, end_state


def test_a_symlink_or_fifo_the_agent_left_is_hashed_without_being_read(tmp_path):
    (tmp_path / "zero").symlink_to("/dev/zero")  # followed, this would read forever
    os.mkfifo(tmp_path / "pipe")  # opened, this would block forever
    (tmp_path / "a.txt").write_text("a")
    state = end_state(tmp_path, ["zero", "pipe", "a.txt", "gone"], None)
    assert set(state["files"]) == {"zero", "pipe", "a.txt", "gone"}
    assert state["files"]["gone"] is None and all(state["files"][k] for k in ("zero", "pipe", "a.txt"))
    (tmp_path / "zero").unlink()
    (tmp_path / "zero").symlink_to("/dev/null")  # another target: another state
    assert end_state(tmp_path, ["zero"], None)["files"]["zero"] != state["files"]["zero"]


def test_a_recorded_state_naming_paths_outside_the_workspace_is_a_mismatch(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (tmp_path / "ws").mkdir()
    (run / "workspace.json").write_text(json.dumps({"base": None, "files": {"../secret": None}}))
    with pytest.raises(WorkspaceMismatch, match="not a path in the workspace"):
        check(tmp_path / "ws", run)
    assert check(tmp_path / "ws", run, force=True) is None


@pytest.mark.parametrize("kind", ["symlink", "fifo"])
def test_a_lock_file_is_never_written_through_a_link_nor_waited_on(tmp_path, kind):
    run = tmp_path / "run"
    run.mkdir()
    victim = tmp_path / "victim"
    victim.write_text("precious")
    if kind == "symlink":
        (run / ".lock").symlink_to(victim)
    else:
        os.mkfifo(run / ".lock")
    with pytest.raises(LockUnusable):  # refused, never run unlocked (tests/cli/test_resume_locks.py)
        acquire(run, "run x")
    assert is_locked(run) is None
    assert victim.read_text() == "precious"
