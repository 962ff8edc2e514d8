from __future__ import annotations

import os

import pytest

from runner.tools.base import ToolContext, ToolError
from runner.tools.write import Write


def test_creates_parents(ctx, ws):
    out = Write().run({"path": "a/b/c.txt", "content": "héllo\n"}, ctx)
    assert (ws / "a" / "b" / "c.txt").read_text(encoding="utf-8") == "héllo\n"
    assert out.content == "created a/b/c.txt (7 bytes)"
    assert out.details == {"bytes_written": 7, "created": True}


def test_overwrites(ctx, ws):
    (ws / "f.txt").write_text("old content")
    out = Write().run({"path": "f.txt", "content": "new"}, ctx)
    assert (ws / "f.txt").read_text() == "new"
    assert out.content == "overwrote f.txt (3 bytes)"
    assert out.details["created"] is False


@pytest.mark.parametrize("raw", [".agent-run/runs/r1/summary.json", "src/../.agent-run/runs/x", ".git/config"])
def test_refuses_protected_paths(ws, raw):
    ctx = ToolContext(workspace=ws, protected=(ws / ".agent-run" / "runs", ws / ".git" / "config"))
    with pytest.raises(ToolError) as info:
        Write().run({"path": raw, "content": "x"}, ctx)
    assert info.value.type == "PathTraversalBlocked"
    assert not (ws / raw).exists()
    # Refused before any directory is created.
    assert not (ws / ".agent-run").exists()


def test_refuses_protected_path_through_symlink(ws):
    (ws / ".agent-run" / "runs").mkdir(parents=True)
    os.symlink(ws / ".agent-run" / "runs", ws / "innocent")
    ctx = ToolContext(workspace=ws, protected=(ws / ".agent-run" / "runs",))
    with pytest.raises(ToolError) as info:
        Write().run({"path": "innocent/x.json", "content": "x"}, ctx)
    assert info.value.type == "PathTraversalBlocked"
    assert list((ws / ".agent-run" / "runs").iterdir()) == []


def test_target_of_write(ctx):
    assert [(t.domain, t.target) for t in Write().targets({"path": "a/b.txt", "content": ""}, ctx)] == [
        ("edit", "workspace:a/b.txt")]
