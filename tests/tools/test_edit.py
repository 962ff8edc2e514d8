from __future__ import annotations

import os
import stat

import pytest

from runner.engine.cancel import RunCancel
from runner.tools.base import ToolContext, ToolError
from runner.tools.edit import MAX_DIFF_LINES, Edit


@pytest.fixture
def f(ws):
    path = ws / "f.py"
    path.write_text("a = 1\nb = 1\nc = 2\n", encoding="utf-8")
    return path


def edit_error(ctx, **args) -> ToolError:
    with pytest.raises(ToolError) as info:
        Edit().run(args, ctx)
    return info.value


def test_unique_replacement(ctx, f):
    out = Edit().run({"path": "f.py", "old_string": "c = 2", "new_string": "c = 3"}, ctx)
    assert f.read_text() == "a = 1\nb = 1\nc = 3\n"
    assert out.content == "edited f.py: 1 replacement(s)\n@@ -1,3 +1,3 @@\n a = 1\n b = 1\n-c = 2\n+c = 3"
    assert out.details == {"replacements": 1, "diff_lines": 5}


def test_ambiguous_is_refused_and_file_untouched(ctx, f):
    err = edit_error(ctx, path="f.py", old_string="= 1", new_string="= 9")
    assert err.type == "InvalidArguments"
    assert "occurs 2 times" in err.message
    assert f.read_text() == "a = 1\nb = 1\nc = 2\n"


def test_replace_all(ctx, f):
    out = Edit().run({"path": "f.py", "old_string": "= 1", "new_string": "= 9", "replace_all": True}, ctx)
    assert f.read_text() == "a = 9\nb = 9\nc = 2\n"
    assert out.details == {"replacements": 2, "diff_lines": 6}
    assert out.content.splitlines()[1:] == ["@@ -1,3 +1,3 @@", "-a = 1", "-b = 1", "+a = 9", "+b = 9", " c = 2"]


def test_not_found(ctx, f):
    err = edit_error(ctx, path="f.py", old_string="zzz", new_string="y")
    assert (err.type, err.message) == ("InvalidArguments", "old_string not found in f.py; nothing in it is alike, "
                                       "and it holds (copy old_string from it exactly):\n1\ta = 1\n2\tb = 1\n3\tc = 2")


def test_missing_file(ctx):
    assert edit_error(ctx, path="nope.py", old_string="a", new_string="b").type == "IOError"


def test_protected(ws):
    (ws / ".git").mkdir()
    (ws / ".git" / "config").write_text("[core]\n")
    ctx = ToolContext(workspace=ws, cancel=RunCancel(), protected=(ws / ".git" / "config",))
    err = edit_error(ctx, path=".git/config", old_string="[core]", new_string="[x]")
    assert err.type == "PathTraversalBlocked"
    assert (ws / ".git" / "config").read_text() == "[core]\n"


def test_keeps_permission_bits(ctx, f):
    f.chmod(0o640)
    Edit().run({"path": "f.py", "old_string": "c = 2", "new_string": "c = 3"}, ctx)
    assert f.read_text() == "a = 1\nb = 1\nc = 3\n"
    assert stat.S_IMODE(f.stat().st_mode) == 0o640


def test_atomic_no_temp_file_left(ctx, ws, f):
    Edit().run({"path": "f.py", "old_string": "c = 2", "new_string": "c = 3"}, ctx)
    assert [p.name for p in ws.iterdir()] == ["f.py"]


def test_ambiguous_message_counts_matches_with_replace_all_false(ctx, f):
    err = edit_error(ctx, path="f.py", old_string="1", new_string="9", replace_all=False)
    assert err.message == "old_string occurs 2 times in f.py; add context or set replace_all"


def test_crlf_file_stays_crlf(ctx, ws):
    path = ws / "win.txt"
    path.write_bytes(b"one\r\ntwo\r\nthree\r\n")
    # The model saw the lines through `read`, without their '\r'.
    out = Edit().run({"path": "win.txt", "old_string": "one\ntwo", "new_string": "one\n2"}, ctx)
    assert path.read_bytes() == b"one\r\n2\r\nthree\r\n"
    assert out.details["replacements"] == 1


def test_edit_through_symlink_keeps_link(ctx, ws, f):
    os.symlink("f.py", ws / "alias.py")
    Edit().run({"path": "alias.py", "old_string": "c = 2", "new_string": "c = 3"}, ctx)
    assert (ws / "alias.py").is_symlink()
    assert f.read_text() == "a = 1\nb = 1\nc = 3\n"


def test_long_diff_is_capped(ctx, ws):
    path = ws / "many.txt"
    path.write_text("x\n" * 300)
    out = Edit().run({"path": "many.txt", "old_string": "x", "new_string": "y", "replace_all": True}, ctx)
    lines = out.content.splitlines()
    # One hunk: its header, 300 removed and 300 added lines.
    assert out.details["diff_lines"] == 601
    assert len(lines) == 1 + MAX_DIFF_LINES + 1
    assert lines[-1] == f"[{601 - MAX_DIFF_LINES} more diff lines not shown]"


def test_crlf_diff_has_no_carriage_returns(ctx, ws):
    (ws / "win.txt").write_bytes(b"one\r\ntwo\r\n")
    out = Edit().run({"path": "win.txt", "old_string": "two", "new_string": "2"}, ctx)
    assert out.content.splitlines()[1:] == ["@@ -1,2 +1,2 @@", " one", "-two", "+2"]
    assert "\r" not in out.content
