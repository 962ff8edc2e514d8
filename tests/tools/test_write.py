from __future__ import annotations

import os
import stat

import pytest

from runner.engine.cancel import RunCancel
from runner.tools.base import ToolContext, ToolError
from runner.tools.edit import MAX_DIFF_LINES
from runner.tools.read import Read
from runner.tools.write import Write


def test_creates_parents(ctx, ws):
    out = Write().run({"path": "a/b/c.txt", "content": "héllo\n"}, ctx)
    assert (ws / "a" / "b" / "c.txt").read_text(encoding="utf-8") == "héllo\n"
    # A new file's diff is all additions.
    assert out.content == "created a/b/c.txt (7 bytes)\n@@ -0,0 +1 @@\n+héllo"
    assert out.details == {"bytes_written": 7, "created": True, "diff_lines": 2}


def test_overwrites_only_a_file_it_has_read_or_when_told(ctx, ws):
    (ws / "f.txt").write_text("old content")
    with pytest.raises(ToolError) as info:  # not read in this run: it would destroy what the agent never saw
        Write().run({"path": "f.txt", "content": "new"}, ctx)
    assert info.value.type == "WouldOverwrite" and (ws / "f.txt").read_text() == "old content"
    assert info.value.message == ("f.txt exists and you have not read it in this run: writing would replace all "
                                  "of it. read it first and change it with edit, or set overwrite: true to "
                                  "replace it whole")
    Read().run({"path": "f.txt"}, ctx)
    out = Write().run({"path": "f.txt", "content": "new"}, ctx)
    assert (ws / "f.txt").read_text() == "new"
    assert out.content == ("overwrote f.txt (3 bytes)\n@@ -1 +1 @@\n-old content\n\\ No newline at end of file\n"
                           "+new\n\\ No newline at end of file")
    assert out.details["created"] is False


@pytest.mark.parametrize("raw", [".agent-run/runs/r1/summary.json", "src/../.agent-run/runs/x", ".git/config"])
def test_refuses_protected_paths(ws, raw):
    ctx = ToolContext(workspace=ws, cancel=RunCancel(), protected=(ws / ".agent-run" / "runs", ws / ".git" / "config"))
    with pytest.raises(ToolError) as info:
        Write().run({"path": raw, "content": "x"}, ctx)
    assert info.value.type == "PathTraversalBlocked"
    assert not (ws / raw).exists()
    # Refused before any directory is created.
    assert not (ws / ".agent-run").exists()


def test_refuses_protected_path_through_symlink(ws):
    (ws / ".agent-run" / "runs").mkdir(parents=True)
    os.symlink(ws / ".agent-run" / "runs", ws / "innocent")
    ctx = ToolContext(workspace=ws, cancel=RunCancel(), protected=(ws / ".agent-run" / "runs",))
    with pytest.raises(ToolError) as info:
        Write().run({"path": "innocent/x.json", "content": "x"}, ctx)
    assert info.value.type == "PathTraversalBlocked"
    assert list((ws / ".agent-run" / "runs").iterdir()) == []


def test_target_of_write(ctx):
    assert [(t.domain, t.target) for t in Write().targets({"path": "a/b.txt", "content": ""}, ctx)] == [
        ("edit", "workspace:a/b.txt")]


def test_keeps_permission_bits(ctx, ws):
    f = ws / "script.sh"
    f.write_text("echo 1\n")
    f.chmod(0o640)
    Write().run({"path": "script.sh", "content": "echo 2\n", "overwrite": True}, ctx)
    assert f.read_text() == "echo 2\n"
    assert stat.S_IMODE(f.stat().st_mode) == 0o640


def test_new_file_gets_umask_mode(ctx, ws):
    old = os.umask(0o027)
    try:
        Write().run({"path": "new.txt", "content": "x"}, ctx)
    finally:
        os.umask(old)
    assert stat.S_IMODE((ws / "new.txt").stat().st_mode) == 0o640


def test_diff_shows_only_the_change_with_context(ctx, ws):
    (ws / "f.txt").write_text("".join(f"line {i}\n" for i in range(1, 21)))
    new = "".join(f"line {i}\n" if i != 10 else "LINE TEN\n" for i in range(1, 21))
    out = Write().run({"path": "f.txt", "content": new, "overwrite": True}, ctx)
    assert out.content.splitlines() == [
        f"overwrote f.txt ({len(new)} bytes)", "@@ -7,7 +7,7 @@",
        " line 7", " line 8", " line 9", "-line 10", "+LINE TEN", " line 11", " line 12", " line 13"]
    assert out.details["diff_lines"] == 9


def test_long_diff_is_capped_with_a_note(ctx, ws):
    out = Write().run({"path": "big.txt", "content": "".join(f"{i}\n" for i in range(200))}, ctx)
    lines = out.content.splitlines()
    assert len(lines) == 1 + MAX_DIFF_LINES + 1
    # 200 added lines and the hunk header: 201 diff lines, 80 shown.
    assert lines[-1] == f"[{201 - MAX_DIFF_LINES} more diff lines not shown]"
    assert out.details["diff_lines"] == 201


def test_binary_previous_content_has_no_diff(ctx, ws):
    (ws / "b.bin").write_bytes(b"\x00\x01\x02")
    out = Write().run({"path": "b.bin", "content": "text", "overwrite": True}, ctx)
    assert out.content == "overwrote b.bin (4 bytes)\n[previous content was not UTF-8 text; no diff]"
    assert out.details["diff_lines"] is None


def test_directory_in_the_way_fails_and_leaves_no_temp_file(ctx, ws):
    (ws / "d").mkdir()
    (ws / "d" / "inside.txt").write_text("keep")
    with pytest.raises(ToolError) as info:
        Write().run({"path": "d", "content": "x"}, ctx)
    assert info.value.type == "IOError"
    assert info.value.message.startswith("cannot write d:")
    assert sorted(p.name for p in ws.iterdir()) == ["d"]
    assert (ws / "d" / "inside.txt").read_text() == "keep"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes read-only files anyway")
def test_read_only_file_is_refused_as_before(ctx, ws):
    f = ws / "ro.txt"
    f.write_text("original")
    f.chmod(0o444)
    with pytest.raises(ToolError) as info:
        Write().run({"path": "ro.txt", "content": "x", "overwrite": True}, ctx)
    assert info.value.type == "IOError"
    assert f.read_text() == "original"
    assert sorted(p.name for p in ws.iterdir()) == ["ro.txt"]


def test_writes_through_a_symlink_and_keeps_the_link(ctx, ws):
    (ws / "real.txt").write_text("a")
    os.symlink("real.txt", ws / "link.txt")
    Write().run({"path": "link.txt", "content": "b", "overwrite": True}, ctx)
    assert (ws / "link.txt").is_symlink()
    assert (ws / "real.txt").read_text() == "b"


def test_writing_what_an_unread_file_already_holds_destroys_nothing(ctx, ws):
    """A repeated or replayed run writes what it wrote before: no read is needed, since nothing is replaced."""
    (ws / "REPORT.md").write_text("# Report\n")
    out = Write().run({"path": "REPORT.md", "content": "# Report\n"}, ctx)
    assert out.content.startswith("overwrote REPORT.md (9 bytes)") and (ws / "REPORT.md").read_text() == "# Report\n"
    with pytest.raises(ToolError) as info:  # one byte more is a replacement again
        Write().run({"path": "REPORT.md", "content": "# Report\n\n"}, ctx.__class__(workspace=ws, cancel=RunCancel()))
    assert info.value.type == "WouldOverwrite"
