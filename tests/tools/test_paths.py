"""Targets are computed on resolved paths, so `..` and symlinks cannot pass for workspace paths."""

from __future__ import annotations

import os

import pytest

from runner.engine.cancel import RunCancel
from runner.policy.decide import decide
from runner.policy.load import load_policy
from runner.tools import paths
from runner.tools.base import ToolContext, ToolError


def target_of(ctx: ToolContext, raw: str) -> str:
    return paths.target(ctx, paths.resolve(ctx, raw))


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("a.py", "workspace:a.py"),
        ("src/pkg/a.py", "workspace:src/pkg/a.py"),
        ("./src/../a.py", "workspace:a.py"),
        (".", "workspace:."),
        ("src/..", "workspace:."),
        ("does/not/exist.txt", "workspace:does/not/exist.txt"),
    ],
)
def test_inside_workspace(ctx, raw, expected):
    assert target_of(ctx, raw) == expected


def test_dotdot_leaves_the_workspace(ctx, ws):
    assert target_of(ctx, "..") == f"fs:{ws.parent.as_posix()}"
    assert target_of(ctx, "../other/x") == f"fs:{(ws.parent / 'other' / 'x').as_posix()}"
    assert target_of(ctx, "src/../../x") == f"fs:{(ws.parent / 'x').as_posix()}"


def test_sibling_with_common_prefix_is_outside(ctx, ws):
    # `/tmp/ws-evil` starts with the string `/tmp/ws` but is not inside it.
    sibling = ws.parent / (ws.name + "-evil")
    assert target_of(ctx, str(sibling)) == f"fs:{sibling.as_posix()}"


def test_absolute_paths(ctx, ws):
    assert target_of(ctx, "/etc/hosts") == "fs:/etc/hosts"
    assert target_of(ctx, str(ws / "src" / "a.py")) == "workspace:src/a.py"
    assert target_of(ctx, str(ws)) == "workspace:."


def test_symlink_leading_out_is_fs(ctx, ws, tmp_path):
    outside = (tmp_path / "outside").resolve()
    outside.mkdir()
    (outside / "secret").write_text("s")
    os.symlink(outside, ws / "link")
    assert target_of(ctx, "link/secret") == f"fs:{(outside / 'secret').as_posix()}"
    assert target_of(ctx, "link") == f"fs:{outside.as_posix()}"


def test_symlink_inside_resolves_to_its_target(ctx, ws):
    (ws / "real").mkdir()
    os.symlink(ws / "real", ws / "alias")
    assert target_of(ctx, "alias/f.txt") == "workspace:real/f.txt"


def test_dangling_symlink_out_is_fs(ctx, ws, tmp_path):
    # A write through a dangling link would create the file outside.
    os.symlink(tmp_path / "nowhere" / "f", ws / "dangling")
    assert target_of(ctx, "dangling").startswith("fs:")


@pytest.mark.parametrize("raw", ["", "a\x00b", None, 3])
def test_invalid_paths(ctx, raw):
    with pytest.raises(ToolError) as info:
        paths.resolve(ctx, raw)
    assert info.value.type == "InvalidArguments"


def test_display(ctx, ws):
    assert paths.display(ctx, ws / "src" / "a.py") == "src/a.py"
    assert paths.display(ctx, ws) == "."
    assert paths.display(ctx, ws.parent / "x") == str(ws.parent / "x")


def test_check_writable(ws):
    guarded = ws / ".agent-run" / "runs"
    ctx = ToolContext(workspace=ws, cancel=RunCancel(), protected=(guarded, ws / ".git" / "config"))
    for ok in (ws / "a", ws / ".agent-run" / "other", ws / ".gitignore", ws / ".github" / "x.yml"):
        paths.check_writable(ctx, ok)
    # What git reads as its own is off limits whatever `protected` says (runner/policy/gitdirs.py).
    for bad in (guarded, guarded / "r1" / "events.jsonl", ws / ".git" / "config", ws / ".git" / "HEAD",
                ws / ".git" / "config.bak"):
        with pytest.raises(ToolError) as info:
            paths.check_writable(ctx, bad)
        assert info.value.type == "PathTraversalBlocked"


def test_a_name_that_is_not_utf8_is_escaped():
    assert paths.escape("caf\udce9.txt") == "caf\\xe9.txt"
    assert paths.escape("plain é.txt") == "plain é.txt"
    assert paths.escape("lone\ud800") == "lone\\ud800"  # not from a byte: a JSON string may hold one


def test_targets_of_a_name_that_is_not_utf8_can_be_decided(ctx, ws):
    # A model may name one (JSON "\udcff"): the policy's matchers take only UTF-8.
    [target] = paths.targets(ctx, "read", "bad\udcff.txt")
    assert target.target == "workspace:bad\\xff.txt"
    assert decide(load_policy("default"), "read", [target]).decision == "allow"
