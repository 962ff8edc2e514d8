"""runner/sandbox/gitmounts.py and runner/policy/gitdirs.py with the real bubblewrap: what git reads as its
own is read-only in every sandboxed process, listed again at each call, and never a way to show a host path."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from runner.policy.gitdirs import git_control, is_git_control
from runner.policy.sandbox_config import SandboxConfig
from runner.sandbox.runtime import Sandbox, open_sandbox

pytestmark = pytest.mark.usefixtures("sandbox_available")

TIMEOUT_S = 30  # a bwrap'd shell takes ~10 ms; this only stops a hang


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / ".git").mkdir(parents=True)
    return ws


@pytest.fixture
def box(workspace: Path) -> Iterator[Sandbox]:
    b = open_sandbox(SandboxConfig(mode="required", network="none"), workspace=workspace, protected=[], readable=[],
                     writable=[], environ=os.environ)
    try:
        yield b
    finally:
        b.close()


def _sh(box: Sandbox, workspace: Path, script: str) -> subprocess.CompletedProcess[str]:
    argv, env = box.wrap(["bash", "-c", script], {"PATH": os.environ.get("PATH", "/usr/bin:/bin")})
    return subprocess.run(argv, env=env, cwd=workspace, capture_output=True, text=True, timeout=TIMEOUT_S,
                          stdin=subprocess.DEVNULL)


def test_a_git_made_by_an_earlier_command_is_read_only_at_the_next(box: Sandbox, workspace: Path) -> None:
    made = _sh(box, workspace, "mkdir -p new/.git && echo one > new/.git/config && echo made")
    assert made.stdout.strip() == "made", made.stderr
    again = _sh(box, workspace, "echo two >> new/.git/config && echo wrote || echo refused")
    assert again.stdout.strip() == "refused"
    assert (workspace / "new" / ".git" / "config").read_text() == "one\n"
    assert _sh(box, workspace, "echo ok > new/file && echo wrote").stdout.strip() == "wrote"  # the rest stays writable


def test_a_git_symlink_never_shows_its_target(box: Sandbox, workspace: Path, tmp_path: Path) -> None:
    """A command can make `sub/.git -> /somewhere/private`: that must not become a mount of the host path."""
    private = tmp_path / "private"
    private.mkdir()
    (private / "secret.txt").write_text("host only\n")
    (workspace / "sub").mkdir()
    (workspace / "sub" / ".git").symlink_to(private)
    out = _sh(box, workspace, "cat sub/.git/secret.txt 2>/dev/null || echo hidden")
    assert out.stdout.strip() == "hidden"
    # The file tools refuse the target all the same: git would follow the link.
    assert is_git_control(workspace, private / "secret.txt")


def test_what_is_not_git_is_not_counted(workspace: Path) -> None:
    for rel in (".gitignore", ".gitattributes", ".gitmodules", ".github/x.yml", "a.git/config", "git/config"):
        assert not is_git_control(workspace, workspace / rel), rel
    os.mkfifo(workspace / "sub.git")
    (workspace / "fifo").mkdir()
    os.mkfifo(workspace / "fifo" / ".git")  # never opened: reading it would wait for a writer
    assert git_control(workspace).entries == (workspace / ".git",)


def test_a_nested_config_stays_sanitized_under_its_read_only_git(workspace: Path) -> None:
    """Both halves of issue 25 over one nested repository: `sub/.git` read-only (here) and its config seen
    through the sanitized copy (credmounts) — the copy is mounted deeper, so it must come after."""
    (workspace / "sub" / ".git").mkdir(parents=True)
    (workspace / "sub" / ".git" / "config").write_text(
        '[core]\n\tbare = false\n[http "https://github.com/"]\n\textraheader = AUTHORIZATION: basic TOKENMARK\n')
    b = open_sandbox(SandboxConfig(mode="required", network="none"), workspace=workspace, protected=[], readable=[],
                     writable=[], environ=os.environ)
    try:
        out = _sh(b, workspace, "cat sub/.git/config; touch sub/.git/x 2>/dev/null && echo WROTE || echo REFUSED")
    finally:
        b.close()
    assert "bare = false" in out.stdout and "TOKENMARK" not in out.stdout
    assert out.stdout.strip().endswith("REFUSED")
