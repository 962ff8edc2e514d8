from __future__ import annotations

import pytest

from runner.tools.base import ToolError
from runner.tools.glob import Glob


@pytest.fixture
def tree(ws):
    for rel in ("a.py", ".hidden.py", "src/b.py", "src/pkg/c.py", "src/readme.md",
                ".git/hooks/x.py", "vendor/.git/y.py"):
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text("")
    (ws / "dir.py").mkdir()
    return ws


def test_globstar_finds_all_depths_sorted(ctx, tree):
    out = Glob().run({"pattern": "**/*.py"}, ctx)
    # .git is excluded at any depth; dotfiles are not; directories are not files.
    assert out.content.splitlines() == [".hidden.py", "a.py", "src/b.py", "src/pkg/c.py"]
    assert out.details == {"matches": 4}


def test_single_star_is_one_level(ctx, tree):
    assert Glob().run({"pattern": "*.py"}, ctx).content.splitlines() == [".hidden.py", "a.py"]


def test_git_excluded_even_when_named(ctx, tree):
    assert Glob().run({"pattern": ".git/**"}, ctx).content == "[no files match]"


def test_relative_to_path(ctx, tree):
    # Shown relative to the workspace (like grep and list), so results can go straight to read.
    assert Glob().run({"pattern": "**/*.py", "path": "src"}, ctx).content.splitlines() == ["src/b.py", "src/pkg/c.py"]


def test_no_match(ctx, tree):
    out = Glob().run({"pattern": "**/*.rs"}, ctx)
    assert (out.content, out.details) == ("[no files match]", {"matches": 0})


def test_path_not_a_directory(ctx, tree):
    with pytest.raises(ToolError) as info:
        Glob().run({"pattern": "*", "path": "a.py"}, ctx)
    assert info.value.type == "IOError"
