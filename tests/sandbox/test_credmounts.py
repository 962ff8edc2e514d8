"""runner/sandbox/credmounts.py: which stored git credentials a sandbox hides, and how (issue 25, item 1)."""

from __future__ import annotations

import os
from pathlib import Path

from runner.sandbox.credmounts import credential_mounts
from runner.sandbox.layout import LayoutInput, build_layout
from runner.workspace.gitconfig import NOTE

SECRET = "[http]\n\textraheader = AUTHORIZATION: basic abc\n"


def _tree(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_every_repository_config_gets_a_sanitized_copy_and_every_credentials_file_an_empty_one(tmp_path):
    ws, private = tmp_path / "ws", tmp_path / "private"
    private.mkdir()
    configs = [".git/config", ".git/config.worktree", ".git/worktrees/w/config.worktree", ".git/modules/a/b/config",
               "vendor/lib/.git/config"]
    _tree(ws, {**dict.fromkeys(configs, SECRET), "deep/er/.git-credentials": "https://u:p@h\n",
               ".git/objects/config": SECRET, "src/config": SECRET, ".agent-run/x/.git-credentials": "x"})
    os.symlink(ws / "deep/er/.git-credentials", ws / "deep/.git-credentials")  # a symlink is never a mount
    before = {p: p.read_bytes() for p in ws.rglob("*") if p.is_file() and not p.is_symlink()}
    mounts = credential_mounts(ws, private)
    bound = {m.dest: m for m in mounts}
    assert set(bound) == {str(ws / c) for c in configs} | {str(ws / "deep/er/.git-credentials")}
    for rel in configs:
        m = bound[str(ws / rel)]
        assert m.kind == "ro" and Path(m.src).is_relative_to(private)
        assert Path(m.src).read_text() == "[http]\n" + NOTE + "\n"
    assert bound[str(ws / "deep/er/.git-credentials")].kind == "mask-file"
    assert {p: p.read_bytes() for p in before} == before, "the workspace is never written"
    layout = build_layout(LayoutInput(workspace=ws, scratch=tmp_path / "s", overlays=mounts), exists=lambda p: True)
    dests = [m.dest for m in layout.mounts]
    assert dests.index(str(ws / ".git/config")) > dests.index(str(ws / ".git")) > dests.index(str(ws))


def test_toolchain_credentials_named_by_the_environment_are_hidden(tmp_path):
    cargo, npmrc = tmp_path / "cargo", tmp_path / "npmrc"
    env = {"CARGO_HOME": str(cargo), "NPM_CONFIG_USERCONFIG": str(npmrc), "HOME": str(tmp_path / "home")}
    layout = build_layout(LayoutInput(workspace=tmp_path / "ws", scratch=tmp_path / "s", environ=env,
                                      readable=(npmrc,)), exists=lambda p: True, is_dir=lambda p: False)
    hidden = {m.dest for m in layout.mounts if m.kind == "mask-file"}
    assert {str(cargo / "credentials.toml"), str(cargo / "config.toml"), str(npmrc),
            str(tmp_path / "home/.cargo/config.toml")} <= hidden
