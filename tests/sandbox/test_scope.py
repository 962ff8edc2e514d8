"""runner/sandbox/scope.py, pure: the mounts a scoped child's commands get (issue 46 item 3)."""

from __future__ import annotations

from pathlib import Path

from runner.sandbox.layout import LayoutInput
from runner.sandbox.scope import scoped_layout


def _kinds(layout, ws: Path) -> dict[str, str]:
    """Each workspace mount's kind, the last at a path winning (as bwrap applies them)."""
    return {m.dest.removeprefix(str(ws)) or "/": m.kind for m in layout.mounts if m.dest.startswith(str(ws))}


def test_write_entries_are_the_only_writable_mounts_and_read_hides_the_rest(tmp_path):
    ws = tmp_path / "ws"
    for d in ("src", "docs", ".git", "out"):
        (ws / d).mkdir(parents=True)
    (ws / "src" / "policy.jsonc").write_text("{}")
    outside = tmp_path / "cache"
    outside.mkdir()
    base = LayoutInput(workspace=ws, scratch=tmp_path / "scratch", protected=(ws / "src" / "policy.jsonc",),
                       writable=(ws / "out", outside))  # what the policy made writable, inside and outside
    only_write = _kinds(scoped_layout(base, None, ("src",)), ws)
    assert only_write["/"] == "ro" and only_write["/src"] == "rw" and only_write["/.git"] == "ro"
    assert only_write["/src/policy.jsonc"] == "ro"  # a shield below an entry stays
    assert "/out" not in only_write  # the policy's writable path inside the workspace is narrowed too
    hidden = _kinds(scoped_layout(base, ("docs", "src"), ("src",)), ws)
    assert hidden["/"] == "tmpfs" and hidden["/docs"] == "ro" and hidden["/src"] == "rw"
    assert "/.git" not in hidden and hidden["/src/policy.jsonc"] == "ro"
    assert any(m.dest == str(outside) and m.kind == "rw" for m in scoped_layout(base, None, ("src",)).mounts)


def test_an_entry_with_a_symlink_on_its_way_is_not_mounted(tmp_path):
    ws = tmp_path / "ws"
    for d in ("src", "secrets"):
        (ws / d).mkdir(parents=True)
    (ws / "out").symlink_to("secrets")  # bwrap would bind secrets/ read-write at out/
    (ws / "src" / "gen").symlink_to("../secrets")
    base = LayoutInput(workspace=ws, scratch=tmp_path / "scratch")
    only_write = _kinds(scoped_layout(base, None, ("out", "src", "src/gen")), ws)
    assert only_write == {"/": "ro", "/src": "rw"}
    hidden = _kinds(scoped_layout(base, ("out/x",), ("out",)), ws)
    assert hidden == {"/": "tmpfs"}
