from __future__ import annotations

import pytest

from runner.tools.base import ToolError
from runner.tools.glob import MAX_MATCHES, Glob
from runner.tools.grep import Grep
from runner.tools.ignore import IgnoreMatcher
from runner.tools.list import List

ROOT_GITIGNORE = """\
# logs, except the one we keep
*.log
!keep.log
build/
/dist
out/
!out/re-included.txt
"""

FILES = [
    "app.py", "debug.log", "keep.log", "secret.txt",
    "build/main.js", "dist/bundle.js",
    "src/app.py", "src/debug.log", "src/keep.log", "src/build/gen.py", "src/dist/kept.js", "src/build",
    "out/re-included.txt",
    "sub/b.py", "sub/a.tmp", "sub/local/f.py", "sub/deep/local/g.py", "sub/deep/c.tmp",
    "a.tmp", "we[ird]/k.c", "wei/k.c",
    ".git/HEAD", ".agent-run/runs/r1/summary.json",
]


@pytest.fixture
def tree(ws):
    for rel in FILES:
        path = ws / rel
        if rel == "src/build":
            continue  # see below: `build` is a directory there
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("needle\n")
    (ws / ".gitignore").write_text(ROOT_GITIGNORE)
    # Nested: relative to sub/, overriding the root's rules below it.
    (ws / "sub" / ".gitignore").write_text("*.tmp\n/local\n")
    (ws / "sub" / "deep" / ".gitignore").write_text("!c.tmp\n")
    (ws / "we[ird]" / ".gitignore").write_text("*.c\n")
    (ws / ".git" / "info").mkdir(parents=True)
    (ws / ".git" / "info" / "exclude").write_text("secret.txt\n")
    return ws


@pytest.mark.parametrize(("rel", "is_dir", "expected"), [
    ("debug.log", False, True),
    ("src/debug.log", False, True),       # unanchored: any depth
    ("keep.log", False, False),           # negation
    ("src/keep.log", False, False),
    ("build", True, True),                # directory pattern
    ("build", False, False),              # ... matches directories only
    ("build/main.js", False, True),       # inside an ignored directory
    ("src/build", True, True),            # `build/` has no inner slash: any depth
    ("dist", True, True),                 # anchored `/dist`: the root's only
    ("src/dist", True, False),
    ("src/dist/kept.js", False, False),
    ("out/re-included.txt", False, True),  # nothing below an ignored directory comes back
    ("secret.txt", False, True),          # .git/info/exclude
    ("sub/a.tmp", False, True),           # nested .gitignore
    ("a.tmp", False, False),              # ... applies to its own directory only
    ("sub/local", True, True),            # nested anchored `/local`: relative to sub/
    ("sub/deep/local", True, False),
    ("sub/deep/c.tmp", False, False),     # deeper negation overrides the parent's rule
    ("we[ird]/k.c", False, True),         # glob characters in a directory name are literal
    ("wei/k.c", False, False),
    ("app.py", False, False),
])
def test_matcher(tree, rel, is_dir, expected):
    assert IgnoreMatcher(tree).ignored(tree / rel, is_dir) is expected


def test_matcher_without_any_ignore_file(ws):
    (ws / "x.log").write_text("")
    assert IgnoreMatcher(ws).ignored(ws / "x.log", False) is False


def test_paths_outside_the_workspace_are_never_ignored(tree, tmp_path):
    assert IgnoreMatcher(tree).ignored(tmp_path / "debug.log", False) is False


def test_glob_skips_ignored_files(ctx, tree):
    assert Glob().run({"pattern": "**/*"}, ctx).content.splitlines() == [
        ".gitignore", "a.tmp", "app.py", "keep.log", "src/app.py", "src/dist/kept.js", "src/keep.log",
        "sub/.gitignore", "sub/b.py", "sub/deep/.gitignore", "sub/deep/c.tmp", "sub/deep/local/g.py",
        "we[ird]/.gitignore", "wei/k.c"]


def test_glob_keeps_negated_files(ctx, tree):
    assert Glob().run({"pattern": "**/*.log"}, ctx).content.splitlines() == ["keep.log", "src/keep.log"]


@pytest.mark.parametrize(("args", "expected"), [
    ({"pattern": "build/**"}, ["build/main.js"]),                  # leading literal directory
    ({"pattern": "**/*.js", "path": "build"}, ["build/main.js"]),  # path
    ({"pattern": "src/build/*.py"}, ["src/build/gen.py"]),
    ({"pattern": "debug.log"}, ["debug.log"]),                     # a plain file name
    ({"pattern": "*.log", "path": "src"}, ["src/keep.log"]),       # src is not ignored: its logs are
])
def test_glob_explicitly_named_ignored_paths(ctx, tree, args, expected):
    assert Glob().run(args, ctx).content.splitlines() == expected


def test_glob_still_skips_git_and_runner_state(ctx, tree):
    assert Glob().run({"pattern": ".agent-run/**"}, ctx).content == "[no files match]"
    assert Glob().run({"pattern": "**/summary.json"}, ctx).content == "[no files match]"
    assert Glob().run({"pattern": ".git/HEAD"}, ctx).content == "[no files match]"


@pytest.mark.parametrize("pattern", ["../*", "/etc/*", "src/../../*"])
def test_glob_pattern_cannot_leave_path(ctx, tree, pattern):
    # The policy decided `path`; a pattern reaching outside it would list what nobody decided.
    with pytest.raises(ToolError) as info:
        Glob().run({"pattern": pattern}, ctx)
    assert info.value.type == "InvalidArguments"


def test_glob_cap_counts_only_files_not_ignored(ctx, ws):
    (ws / ".gitignore").write_text("*.log\n")
    for i in range(MAX_MATCHES + 7):
        (ws / f"f{i:05}.txt").write_text("")
        (ws / f"f{i:05}.log").write_text("")
    out = Glob().run({"pattern": "*"}, ctx)
    lines = out.content.splitlines()
    # .gitignore itself and the .txt files: 1 + MAX_MATCHES + 7 matches, MAX_MATCHES shown.
    assert lines[-1] == "[8 more matches not shown; narrow the pattern]"
    assert len(lines) == MAX_MATCHES + 1
    assert out.details == {"matches": MAX_MATCHES + 8}


def test_grep_skips_ignored_files(ctx, tree):
    out = Grep().run({"pattern": "needle"}, ctx)
    assert [line.split(":")[0] for line in out.content.splitlines()] == [
        "a.tmp", "app.py", "keep.log", "src/app.py", "src/dist/kept.js", "src/keep.log", "sub/b.py",
        "sub/deep/c.tmp", "sub/deep/local/g.py", "wei/k.c"]


def test_grep_searches_an_ignored_file_named_by_path(ctx, tree):
    assert Grep().run({"pattern": "needle", "path": "src/debug.log"}, ctx).content == "src/debug.log:1: needle"


def test_grep_searches_an_ignored_directory_named_by_path(ctx, tree):
    assert Grep().run({"pattern": "needle", "path": "build"}, ctx).content == "build/main.js:1: needle"


def test_grep_include_naming_an_ignored_directory(ctx, tree):
    out = Grep().run({"pattern": "needle", "include": "dist/*.js"}, ctx)
    assert out.content == "dist/bundle.js:1: needle"


def test_grep_include_cannot_leave_path(ctx, tree):
    with pytest.raises(ToolError) as info:
        Grep().run({"pattern": "x", "include": "../**"}, ctx)
    assert info.value.type == "InvalidArguments"


def test_list_annotates_ignored_entries(ctx, tree):
    assert List().run({}, ctx).content.splitlines() == [
        ".agent-run/", ".git/", ".gitignore", "a.tmp", "app.py", "build/ (ignored)", "debug.log (ignored)",
        "dist/ (ignored)", "keep.log", "out/ (ignored)", "secret.txt (ignored)", "src/", "sub/", "we[ird]/",
        "wei/"]


def test_list_nested(ctx, tree):
    assert List().run({"path": "sub"}, ctx).content.splitlines() == [
        ".gitignore", "a.tmp (ignored)", "b.py", "deep/", "local/ (ignored)"]
    # Inside an ignored directory everything is ignored.
    assert List().run({"path": "build"}, ctx).content == "main.js (ignored)"


def test_grep_does_not_follow_a_symlink_out_of_path(ctx, ws, tmp_path):
    (tmp_path / "outside.txt").write_text("needle outside\n")
    (ws / "inside.txt").write_text("needle inside\n")
    (ws / "leak.txt").symlink_to(tmp_path / "outside.txt")
    (ws / "alias.txt").symlink_to(ws / "inside.txt")
    out = Grep().run({"pattern": "needle"}, ctx)
    # The policy decided workspace:. — not where leak.txt leads; a link within path is fine.
    assert out.content.splitlines() == ["alias.txt:1: needle inside", "inside.txt:1: needle inside"]


def test_glob_refuses_a_symlinked_directory_leading_out(ctx, ws, tmp_path):
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "passwd").write_text("")
    (ws / "ext").symlink_to(tmp_path / "etc")
    with pytest.raises(ToolError) as info:
        Glob().run({"pattern": "ext/*"}, ctx)
    assert info.value.type == "InvalidArguments"
    # `**` never enters a symlinked directory.
    assert Glob().run({"pattern": "**/passwd"}, ctx).content == "[no files match]"
