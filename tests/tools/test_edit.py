from __future__ import annotations

import pytest

from runner.tools.base import ToolContext, ToolError
from runner.tools.edit import Edit


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
    assert out.content == "edited f.py: 1 replacement(s)"
    assert out.details == {"replacements": 1}


def test_ambiguous_is_refused_and_file_untouched(ctx, f):
    err = edit_error(ctx, path="f.py", old_string="= 1", new_string="= 9")
    assert err.type == "InvalidArguments"
    assert "occurs 2 times" in err.message
    assert f.read_text() == "a = 1\nb = 1\nc = 2\n"


def test_replace_all(ctx, f):
    out = Edit().run({"path": "f.py", "old_string": "= 1", "new_string": "= 9", "replace_all": True}, ctx)
    assert f.read_text() == "a = 9\nb = 9\nc = 2\n"
    assert out.details == {"replacements": 2}


def test_not_found(ctx, f):
    err = edit_error(ctx, path="f.py", old_string="zzz", new_string="y")
    assert (err.type, err.message) == ("InvalidArguments", "old_string not found in f.py")


def test_missing_file(ctx):
    assert edit_error(ctx, path="nope.py", old_string="a", new_string="b").type == "IOError"


def test_protected(ws):
    (ws / ".git").mkdir()
    (ws / ".git" / "config").write_text("[core]\n")
    ctx = ToolContext(workspace=ws, protected=(ws / ".git" / "config",))
    err = edit_error(ctx, path=".git/config", old_string="[core]", new_string="[x]")
    assert err.type == "PathTraversalBlocked"
    assert (ws / ".git" / "config").read_text() == "[core]\n"
