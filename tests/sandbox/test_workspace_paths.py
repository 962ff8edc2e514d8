"""What the workspace's own content (symlinks, a .venv on PATH) can make the sandbox mount: nothing outside it.

The layout over a GitHub runner's shape (HOME /home/runner, the workspace at ~/work/r/r, step scripts with
secrets in ~/work/_temp), and runner/sandbox/paths.py over a real filesystem.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from runner.policy.sandbox_config import SandboxConfigError
from runner.sandbox.layout import LayoutInput, toolchain_root
from runner.sandbox.paths import extra_path, extra_paths
from tests.sandbox.test_layout import DIRS, FakeFS, _kinds, _visible

HOME = "/home/runner"
WS = Path(f"{HOME}/work/r/r")
TEMP = f"{HOME}/work/_temp"
RUNNER_DIRS = DIRS | {HOME, f"{HOME}/work", f"{HOME}/work/r", str(WS), f"{WS}/.venv", f"{WS}/.venv/bin",
                      f"{WS}/node_modules/.bin", TEMP, f"{HOME}/go", f"{HOME}/go/bin", f"{HOME}/work/bin"}


def _runner_layout(path: str, **environ: str):
    inp = LayoutInput(workspace=WS, scratch=Path("/tmp/scratch"), environ={"HOME": HOME, "PATH": path, **environ})
    return FakeFS(dirs=RUNNER_DIRS, files={f"{TEMP}/step.sh"}).layout(inp)


# --- H2: toolchain roots never hold the workspace ---------------------------------------------------------


def test_a_workspace_venv_on_path_does_not_expose_the_workspaces_siblings() -> None:
    layout = _runner_layout(f"{WS}/.venv/bin:{WS}/node_modules/.bin:/usr/bin", VIRTUAL_ENV=f"{WS}/.venv")
    assert not _visible(layout, f"{TEMP}/step.sh")
    assert not [m for m in layout.mounts if m.kind in ("ro", "rw") and str(WS).startswith(m.dest + "/")], \
        layout.mounts
    assert _kinds(layout, f"{HOME}/work") == [] and _kinds(layout, f"{WS}/.venv") == []
    assert _visible(layout, f"{WS}/.venv/bin/python")  # through the workspace itself


def test_a_toolchain_holding_the_workspace_shows_only_its_entry() -> None:
    # A GOPATH checkout: ~/go would otherwise be mounted whole, with every other checkout in it.
    gopath_ws = Path(f"{HOME}/go/src/github.com/o/r")
    inp = LayoutInput(workspace=gopath_ws, scratch=Path("/tmp/scratch"),
                      environ={"HOME": HOME, "PATH": f"{HOME}/go/bin:/usr/bin"})
    layout = FakeFS(dirs=RUNNER_DIRS | {str(gopath_ws)}).layout(inp)
    assert _kinds(layout, f"{HOME}/go") == []
    assert _kinds(layout, f"{HOME}/go/bin") == ["ro"]


@pytest.mark.parametrize(("entry", "expected"), [
    (f"{WS}/.venv/bin", ""),  # inside the workspace: visible already
    (str(WS), ""),
    (f"{HOME}/work", ""),  # holds the workspace
    (f"{HOME}/work/bin", f"{HOME}/work/bin"),  # its tree (~/work) holds the workspace: the entry alone
    ("/opt/tool/1.0/bin", "/opt/tool"),  # unrelated to the workspace: as before
    (f"{HOME}/.pyenv/shims", f"{HOME}/.pyenv"),
])
def test_toolchain_root_with_a_workspace(entry: str, expected: str) -> None:
    assert toolchain_root(entry, HOME, str(WS)) == expected


def test_a_writable_path_inside_the_workspace_is_not_mounted_again() -> None:
    # `sandbox.writable: ["data"]` with a committed `data -> .git/hooks`: a second rw mount would re-open
    # the read-only .git below the workspace.
    inp = LayoutInput(workspace=WS, scratch=Path("/tmp/scratch"), environ={"HOME": HOME, "PATH": "/usr/bin"},
                      writable=(WS / ".git" / "hooks", Path("/var/cache/build")))
    layout = FakeFS(dirs=RUNNER_DIRS | {f"{WS}/.git", f"{WS}/.git/hooks", "/var/cache/build"}).layout(inp)
    assert _kinds(layout, WS / ".git" / "hooks") == []
    assert _kinds(layout, WS / ".git") == ["ro"]
    assert _kinds(layout, "/var/cache/build") == ["rw"]


# --- H3: extra paths and the workspace's symlinks ----------------------------------------------------------


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path]:
    ws = tmp_path / "ws"
    outside = tmp_path / "home"
    (ws / "sub" / "deep").mkdir(parents=True)
    outside.mkdir()
    (ws / "data").symlink_to(outside)  # a committed `data -> /home/runner`
    (ws / "inner").symlink_to(ws / "sub")
    (ws / "sub" / "up").symlink_to("../data")  # out again, through a second link
    (tmp_path / "shared").mkdir()
    (tmp_path / "hostlink").symlink_to(tmp_path / "shared")  # the host's own link: trusted
    return ws, outside


@pytest.mark.parametrize("raw", ["data", "data/x", "./sub/../data", "sub/up", "inner/up", "{ws}/data"])
def test_a_workspace_symlink_out_of_the_workspace_is_refused(tree: tuple[Path, Path], raw: str) -> None:
    ws, _outside = tree
    with pytest.raises(SandboxConfigError) as info:
        extra_paths([raw.format(ws=ws)], ws, "sandbox.writable")
    assert "sandbox.writable" in str(info.value) and "symlink" in str(info.value)


def test_paths_that_stay_in_the_workspace_or_are_the_hosts_own(tree: tuple[Path, Path]) -> None:
    ws, _outside = tree
    real = Path(os.path.realpath(ws))
    assert extra_path("inner/deep", ws, "w") == real / "sub" / "deep"
    assert extra_path("sub", ws, "w") == real / "sub"
    assert extra_path("missing/dir", ws, "w") == real / "missing" / "dir"
    assert extra_path("../shared", ws, "w") == real.parent / "shared"  # written by the trusted author
    assert extra_path(str(ws.parent / "hostlink"), ws, "w") == real.parent / "shared"
    assert extra_path("../hostlink", ws, "w") == real.parent / "shared"


def test_a_run_whose_sandbox_writable_is_a_workspace_symlink_out_is_refused(fake, workspace, agent_run, tmp_path):
    outside = tmp_path / "runner-home"
    outside.mkdir()
    (workspace / "data").symlink_to(outside)
    (workspace / "p.jsonc").write_text(json.dumps({"extends": "default", "sandbox": {"writable": ["data"]}}))
    r = agent_run("--policy", "p.jsonc", "task.md")
    assert r.code == 2 and "sandbox.writable" in r.stderr and "symlink" in r.stderr, r.stderr
    assert not fake.requests
