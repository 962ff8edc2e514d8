from __future__ import annotations

import os

import pytest

from runner.engine.cancel import RunCancel
from runner.tools.base import ToolContext, ToolError
from runner.tools.delete import Delete
from runner.tools.registry import core_tools


def delete_error(ctx, path) -> ToolError:
    with pytest.raises(ToolError) as info:
        Delete().run({"path": path}, ctx)
    return info.value


def test_deletes_a_file(ctx, ws):
    (ws / "a").mkdir()
    (ws / "a" / "f.txt").write_text("x")
    out = Delete().run({"path": "a/f.txt"}, ctx)
    assert not (ws / "a" / "f.txt").exists()
    assert (ws / "a").is_dir()
    assert (out.content, out.details) == ("deleted file a/f.txt", {"kind": "file"})


def test_deletes_an_empty_directory(ctx, ws):
    (ws / "empty").mkdir()
    out = Delete().run({"path": "empty/"}, ctx)
    assert not (ws / "empty").exists()
    assert out.content == "deleted directory empty/"


def test_non_empty_directory_is_refused(ctx, ws):
    (ws / "d").mkdir()
    (ws / "d" / "x").write_text("")
    (ws / "d" / "y").write_text("")
    err = delete_error(ctx, "d")
    assert err.type == "IOError"
    assert err.message == "d/ is not empty (2 entries); delete the files in it first"
    assert sorted(p.name for p in (ws / "d").iterdir()) == ["x", "y"]


def test_missing(ctx):
    err = delete_error(ctx, "nope.txt")
    assert (err.type, err.message) == ("IOError", "nope.txt does not exist")


def test_symlink_deletes_the_link_not_its_target(ctx, ws, tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("precious")
    os.symlink(outside, ws / "link")
    # Decided on the link's own path, which is what changes.
    assert [(t.domain, t.target) for t in Delete().targets({"path": "link"}, ctx)] == [("edit", "workspace:link")]
    out = Delete().run({"path": "link"}, ctx)
    assert out.details == {"kind": "symlink"}
    assert not os.path.lexists(ws / "link")
    assert outside.read_text() == "precious"


def test_targets_resolve_the_parent(ctx, ws, tmp_path):
    os.symlink(tmp_path, ws / "up")
    assert [t.target for t in Delete().targets({"path": "up/f.txt"}, ctx)] == [f"fs:{tmp_path.as_posix()}/f.txt"]
    assert [t.target for t in Delete().targets({"path": "src/../f.txt"}, ctx)] == ["workspace:f.txt"]


def test_protected_path_is_refused(ws):
    (ws / ".git").mkdir()
    (ws / ".git" / "config").write_text("[core]\n")
    ctx = ToolContext(workspace=ws, cancel=RunCancel(), protected=(ws / ".git" / "config",))
    err = delete_error(ctx, ".git/config")
    assert err.type == "PathTraversalBlocked"
    assert (ws / ".git" / "config").exists()


def test_directory_holding_a_protected_path_is_refused(ws):
    (ws / ".agent-run").mkdir()  # empty: the protected runs directory does not exist yet
    ctx = ToolContext(workspace=ws, cancel=RunCancel(), protected=(ws / ".agent-run" / "runs",))
    assert delete_error(ctx, ".agent-run").type == "PathTraversalBlocked"
    assert (ws / ".agent-run").is_dir()


def test_the_workspace_itself_is_refused(ctx, ws):
    assert delete_error(ctx, ".").type == "PathTraversalBlocked"
    assert ws.is_dir()


def test_registered_after_edit():
    names = core_tools().names
    assert names[names.index("edit") + 1: names.index("edit") + 3] == ["delete", "move"]
    assert core_tools().get("delete").domain == "edit"
