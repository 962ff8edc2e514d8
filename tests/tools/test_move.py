from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path

import pytest

from runner.engine.cancel import RunCancel
from runner.tools.base import ToolContext, ToolError
from runner.tools.move import Move


def move_error(ctx, **args) -> ToolError:
    with pytest.raises(ToolError) as info:
        Move().run(args, ctx)
    return info.value


def test_both_paths_are_decided(ctx):
    targets = Move().targets({"source": "a.txt", "destination": "../elsewhere/b.txt"}, ctx)
    assert [(t.domain, t.target) for t in targets] == [
        ("edit", "workspace:a.txt"), ("edit", f"fs:{ctx.workspace.parent.as_posix()}/elsewhere/b.txt")]


def test_renames_and_creates_parents(ctx, ws):
    (ws / "a.txt").write_text("content")
    out = Move().run({"source": "a.txt", "destination": "x/y/b.txt"}, ctx)
    assert not (ws / "a.txt").exists()
    assert (ws / "x" / "y" / "b.txt").read_text() == "content"
    assert out.content == "moved a.txt to x/y/b.txt"
    assert out.details == {"overwrote": False, "directory": False, "across_filesystems": False}


def test_existing_destination_refused_without_overwrite(ctx, ws):
    (ws / "a.txt").write_text("new")
    (ws / "b.txt").write_text("old")
    err = move_error(ctx, source="a.txt", destination="b.txt")
    assert (err.type, err.message) == ("IOError", "b.txt exists; set overwrite: true to replace it")
    assert (ws / "a.txt").read_text() == "new"
    assert (ws / "b.txt").read_text() == "old"
    # overwrite: false is the same as not saying
    assert move_error(ctx, source="a.txt", destination="b.txt", overwrite=False).type == "IOError"


def test_overwrite_allowed_when_asked(ctx, ws):
    (ws / "a.txt").write_text("new")
    (ws / "b.txt").write_text("old")
    out = Move().run({"source": "a.txt", "destination": "b.txt", "overwrite": True}, ctx)
    assert (ws / "b.txt").read_text() == "new"
    assert not (ws / "a.txt").exists()
    assert out.details["overwrote"] is True
    assert out.content == "moved a.txt to b.txt (replaced the existing file)"


def test_existing_directory_is_never_overwritten(ctx, ws):
    (ws / "a.txt").write_text("x")
    (ws / "dir").mkdir()
    err = move_error(ctx, source="a.txt", destination="dir", overwrite=True)
    assert err.type == "IOError"
    assert "give the full destination path (e.g. dir/a.txt)" in err.message
    assert (ws / "a.txt").exists()


def test_moves_a_directory(ctx, ws):
    (ws / "src" / "pkg").mkdir(parents=True)
    (ws / "src" / "pkg" / "m.py").write_text("m")
    out = Move().run({"source": "src", "destination": "lib"}, ctx)
    assert (ws / "lib" / "pkg" / "m.py").read_text() == "m"
    assert not (ws / "src").exists()
    assert out.details["directory"] is True


def test_directory_into_itself_is_refused(ctx, ws):
    (ws / "d").mkdir()
    err = move_error(ctx, source="d", destination="d/inner/d")
    assert err.type == "IOError"
    assert (ws / "d").is_dir()
    assert not (ws / "d" / "inner").exists()


def test_missing_source(ctx):
    err = move_error(ctx, source="nope", destination="b")
    assert (err.type, err.message) == ("IOError", "nope does not exist")


def test_same_path(ctx, ws):
    (ws / "a").write_text("")
    assert move_error(ctx, source="a", destination="./a").type == "InvalidArguments"


def test_symlink_moves_the_link(ctx, ws):
    (ws / "real.txt").write_text("r")
    os.symlink("real.txt", ws / "link")
    Move().run({"source": "link", "destination": "renamed"}, ctx)
    assert os.readlink(ws / "renamed") == "real.txt"
    assert (ws / "real.txt").read_text() == "r"
    assert not os.path.lexists(ws / "link")


def test_protected_destination_is_refused(ws):
    (ws / "hook.sh").write_text("evil")
    ctx = ToolContext(workspace=ws, cancel=RunCancel(), protected=(ws / ".git" / "hooks",))
    err = move_error(ctx, source="hook.sh", destination=".git/hooks/pre-commit")
    assert err.type == "PathTraversalBlocked"
    assert (ws / "hook.sh").exists()
    assert not (ws / ".git").exists()  # refused before any directory is created


def test_protected_source_is_refused(ws):
    (ws / ".git").mkdir()
    (ws / ".git" / "config").write_text("[core]\n")
    ctx = ToolContext(workspace=ws, cancel=RunCancel(), protected=(ws / ".git" / "config",))
    err = move_error(ctx, source=".git/config", destination="config.bak")
    assert err.type == "PathTraversalBlocked"
    assert (ws / ".git" / "config").exists()
    assert not (ws / "config.bak").exists()


def test_moving_a_directory_that_holds_a_protected_path_is_refused(ws):
    (ws / ".git" / "hooks").mkdir(parents=True)
    ctx = ToolContext(workspace=ws, cancel=RunCancel(), protected=(ws / ".git" / "hooks",))
    # Moving .git away and back would be a way to rewrite its hooks.
    err = move_error(ctx, source=".git", destination="g")
    assert err.type == "PathTraversalBlocked"
    assert (ws / ".git" / "hooks").is_dir()


def test_protected_destination_through_symlinked_parent(ws):
    (ws / ".agent-run" / "runs").mkdir(parents=True)
    os.symlink(ws / ".agent-run", ws / "innocent")
    (ws / "x.json").write_text("{}")
    ctx = ToolContext(workspace=ws, cancel=RunCancel(), protected=(ws / ".agent-run" / "runs",))
    assert move_error(ctx, source="x.json", destination="innocent/runs/x.json").type == "PathTraversalBlocked"
    assert list((ws / ".agent-run" / "runs").iterdir()) == []


def _other_filesystem(ws: Path) -> Path | None:
    shm = Path("/dev/shm")
    if not shm.is_dir() or not os.access(shm, os.W_OK) or shm.stat().st_dev == ws.stat().st_dev:
        return None
    return shm / f"agent-run-test-{uuid.uuid4().hex}"


@pytest.mark.parametrize("kind", ["file", "directory"])
def test_across_filesystems_copies_then_removes(ctx, ws, kind):
    other = _other_filesystem(ws)
    if other is None:
        pytest.skip("no second filesystem to move to")
    try:
        if kind == "file":
            (ws / "s").write_text("data")
        else:
            (ws / "s" / "sub").mkdir(parents=True)
            (ws / "s" / "sub" / "f").write_text("data")
            os.symlink("sub/f", ws / "s" / "link")
        out = Move().run({"source": "s", "destination": str(other / "d")}, ctx)
        assert out.details["across_filesystems"] is True
        assert not os.path.lexists(ws / "s")
        if kind == "file":
            assert (other / "d").read_text() == "data"
        else:
            assert (other / "d" / "sub" / "f").read_text() == "data"
            assert os.readlink(other / "d" / "link") == "sub/f"
        assert sorted(p.name for p in other.iterdir()) == ["d"]  # no temp copy left beside it
    finally:
        shutil.rmtree(other, ignore_errors=True)
