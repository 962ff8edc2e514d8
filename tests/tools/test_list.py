from __future__ import annotations

import os

import pytest

from runner.tools.base import ToolError
from runner.tools.list import List


def test_sorted_with_slash_for_directories(ctx, ws):
    for d in ("src", "b_dir", ".git"):
        (ws / d).mkdir()
    for f in ("z.txt", "a.txt", ".env"):
        (ws / f).write_text("")
    out = List().run({}, ctx)
    assert out.content.splitlines() == [".env", ".git/", "a.txt", "b_dir/", "src/", "z.txt"]
    assert out.details == {"entries": 6}


def test_subdirectory(ctx, ws):
    (ws / "src" / "pkg").mkdir(parents=True)
    (ws / "src" / "m.py").write_text("")
    assert List().run({"path": "src"}, ctx).content == "m.py\npkg/"


def test_empty_directory(ctx, ws):
    (ws / "empty").mkdir()
    assert List().run({"path": "empty"}, ctx).content == "[empty is empty]"


@pytest.mark.parametrize("setup", ["file", "missing"])
def test_not_a_directory_is_io_error(ctx, ws, setup):
    if setup == "file":
        (ws / "x").write_text("")
    with pytest.raises(ToolError) as info:
        List().run({"path": "x"}, ctx)
    assert info.value.type == "IOError"


def test_root_target(ctx):
    assert [t.target for t in List().targets({}, ctx)] == ["workspace:."]


def test_a_symlink_loop_is_listed_marked_not_followed(ctx, ws):
    (ws / "a").symlink_to("b")
    (ws / "b").symlink_to("a")
    (ws / "self").symlink_to("self")
    (ws / "dangling").symlink_to("nowhere")
    (ws / "d").mkdir()
    (ws / "to_d").symlink_to("d")
    out = List().run({}, ctx)
    assert out.content.splitlines() == ["a (symlink loop)", "b (symlink loop)", "d/", "dangling",
                                        "self (symlink loop)", "to_d/"]


def test_a_name_that_is_not_utf8_is_shown_escaped(ctx, ws):
    os.mkdir(os.path.join(os.fsencode(ws), b"dir\xff"))
    open(os.path.join(os.fsencode(ws), b"f\xe9.txt"), "wb").close()
    assert List().run({}, ctx).content == "dir\\xff/\nf\\xe9.txt"


def test_at_most_1000_entries_are_shown_and_the_rest_counted(ctx, ws):
    """Issue 34 item 4: the cap holds, the listing says how many more there are and how to narrow."""
    from runner.tools.list import MAX_ENTRIES

    big = ws / "big"
    big.mkdir()
    for i in range(MAX_ENTRIES + 7):
        (big / f"f{i:05d}").write_text("")
    out = List().run({"path": "big"}, ctx)
    lines = out.content.splitlines()
    assert MAX_ENTRIES == 1000 and len(lines) == 1001
    assert lines[0] == "f00000" and lines[999] == "f00999"
    assert lines[-1] == "[7 more entries not shown; use glob to narrow]"
    assert out.details["entries"] == 1007
