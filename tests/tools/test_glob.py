from __future__ import annotations

import os

import pytest

from runner.engine.cancel import RunCancel
from runner.policy.load import load_policy
from runner.tools.base import ToolContext, ToolError
from runner.tools.glob import Glob
from runner.tools.readable import policy_decider


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


def test_a_name_that_is_not_utf8_is_shown_escaped_and_decided(ws):
    os.mkdir(os.path.join(os.fsencode(ws), b"d\xff"))
    open(os.path.join(os.fsencode(ws), b"d\xff/f\xe9.py"), "wb").close()
    # The policy's matchers (re2 among them) take only UTF-8: the name is decided as it is shown.
    ctx = ToolContext(workspace=ws, cancel=RunCancel(), decide=policy_decider(load_policy("default")))
    assert Glob().run({"pattern": "**/*.py"}, ctx).content == "d\\xff/f\\xe9.py"


def test_a_symlink_loop_is_a_name_like_any_other(ctx, ws):
    (ws / "loop").symlink_to("loop")
    (ws / "a.py").write_text("")
    assert Glob().run({"pattern": "**"}, ctx).content == "a.py\nloop"
