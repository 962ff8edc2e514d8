from __future__ import annotations

import pytest

from runner.tools.base import ToolError
from runner.tools.grep import MAX_MATCHES, Grep


@pytest.fixture
def tree(ws):
    files = {
        "a.py": "import os\nneedle = 1\n",
        "src/b.py": "x\ny\nneedle()\n",
        "src/notes.md": "a needle in markdown\n",
        ".git/config": "needle in git\n",
        "vendor/.git/HEAD": "needle\n",
    }
    for rel, text in files.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(text)
    (ws / "blob.bin").write_bytes(b"\x00\x01needle")
    return ws


def test_matches_with_path_and_line(ctx, tree):
    out = Grep().run({"pattern": "needle"}, ctx)
    # .git directories and binary files are skipped.
    assert out.content.splitlines() == [
        "a.py:2: needle = 1", "src/b.py:3: needle()", "src/notes.md:1: a needle in markdown",
    ]
    assert out.details["matches"] == 3


def test_include_filters_files(ctx, tree):
    out = Grep().run({"pattern": "needle", "include": "**/*.py"}, ctx)
    assert out.content.splitlines() == ["a.py:2: needle = 1", "src/b.py:3: needle()"]


def test_regex_syntax(ctx, tree):
    assert Grep().run({"pattern": r"^needle\(\)$"}, ctx).content == "src/b.py:3: needle()"


def test_single_file_path(ctx, tree):
    assert Grep().run({"pattern": "needle", "path": "src/notes.md"}, ctx).content == (
        "src/notes.md:1: a needle in markdown")


def test_no_matches(ctx, tree):
    assert Grep().run({"pattern": "haystack"}, ctx).content == "[no matches]"


def test_invalid_regex(ctx, tree):
    with pytest.raises(ToolError) as info:
        Grep().run({"pattern": "("}, ctx)
    assert info.value.type == "InvalidArguments"
    assert info.value.message.startswith("invalid regex:")


def test_missing_path(ctx, tree):
    with pytest.raises(ToolError) as info:
        Grep().run({"pattern": "x", "path": "nope"}, ctx)
    assert info.value.type == "IOError"


def test_match_cap(ctx, ws):
    extra = 37
    (ws / "many.txt").write_text("hit\n" * (MAX_MATCHES + extra))
    out = Grep().run({"pattern": "hit"}, ctx)
    lines = out.content.splitlines()
    assert len(lines) == MAX_MATCHES + 1
    assert lines[MAX_MATCHES - 1] == f"many.txt:{MAX_MATCHES}: hit"
    assert lines[-1] == f"[{extra} more matches not shown; narrow the pattern or path]"
    assert out.details["matches"] == MAX_MATCHES + extra
