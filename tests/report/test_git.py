"""The runner's own git never runs what the agent wrote: each attack file is planted after the
run started (as an agent without a sandbox could), the end-of-run diff runs, no marker appears.
Each case first proves that plain git *would* run the planted file."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from runner.report.changes import ChangeTracker

# Values are quoted (`;` starts a comment in git config); `sh -c '…' x` swallows the arguments git appends.
CONFIG_ATTACKS = {
    "fsmonitor": "[core]\n\tfsmonitor = \"sh -c 'touch {marker}' x\"\n",
    "external_diff": "[diff]\n\texternal = \"sh -c 'touch {marker}' x\"\n",
    "filter": "[filter \"x\"]\n\tclean = \"sh -c 'touch {marker}; cat'\"\n",
    "textconv": "[diff \"t\"]\n\ttextconv = \"sh -c 'touch {marker}; cat' x\"\n",
    "pager": "[core]\n\tpager = \"sh -c 'touch {marker}' x\"\n[pager]\n\tdiff = true\n",
}


def _repo(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    for args in (["init", "-q"], ["config", "user.email", "t@t"], ["config", "user.name", "t"]):
        subprocess.run(["git", *args], cwd=ws, check=True)
    (ws / "a.txt").write_text("one\n")
    subprocess.run(["git", "add", "."], cwd=ws, check=True)
    subprocess.run(["git", "commit", "-qm", "init"], cwd=ws, check=True)
    return ws


def _plain_git_runs_it(ws: Path, marker: Path) -> bool:
    # As a runner without these defences would: `git diff` in the workspace, a pager allowed.
    subprocess.run(["git", "-c", "core.pager=", "diff", "HEAD"], cwd=ws, capture_output=True,
                   env={"PATH": "/usr/bin:/bin", "GIT_PAGER_IN_USE": "", "TERM": "dumb", "HOME": str(ws)})
    subprocess.run(["git", "status"], cwd=ws, capture_output=True)
    subprocess.run(["git", "-p", "diff", "HEAD"], cwd=ws, capture_output=True)
    found = marker.exists()
    marker.unlink(missing_ok=True)
    return found


@pytest.mark.parametrize("attack", sorted(CONFIG_ATTACKS))
def test_agent_written_git_config_is_never_run(tmp_path, attack):
    ws = _repo(tmp_path)
    marker = tmp_path / f"ran-{attack}"
    tracker = ChangeTracker(ws)
    assert tracker.git
    with (ws / ".git" / "config").open("a") as f:
        f.write(CONFIG_ATTACKS[attack].format(marker=marker))
    (ws / ".gitattributes").write_text("* filter=x diff=t\n")
    (ws / "a.txt").write_text("two\n")
    if attack != "pager":  # git only pages on a terminal: the planted pager cannot be proven live here
        assert _plain_git_runs_it(ws, marker), f"the planted {attack} does not run even for plain git"
    patch, changed = tracker.patch()
    tracker.close()
    assert not marker.exists()
    assert changed == ["a.txt", ".gitattributes"] and "+two" in patch


def test_agent_written_commondir_and_hooks_are_never_used(tmp_path):
    ws = _repo(tmp_path)
    marker = tmp_path / "ran-commondir"
    tracker = ChangeTracker(ws)
    evil = tmp_path / "evil-common"
    shutil.copytree(ws / ".git", evil)
    with (evil / "config").open("a") as f:
        f.write(f"[core]\n\tfsmonitor = \"sh -c 'touch {marker}' x\"\n")
    (ws / ".git" / "commondir").write_text(f"{evil}\n")
    for hook in ("post-checkout", "pre-commit", "post-index-change", "reference-transaction"):
        (ws / ".git" / "hooks" / hook).write_text(f"#!/bin/sh\ntouch '{marker}'\n")
        (ws / ".git" / "hooks" / hook).chmod(0o755)
    (ws / "a.txt").write_text("two\n")
    assert _plain_git_runs_it(ws, marker), "the planted commondir does not redirect plain git"
    patch, changed = tracker.patch()
    tracker.close()
    assert not marker.exists() and changed == ["a.txt"] and "+two" in patch


def test_the_runner_writes_nothing_into_the_repository(tmp_path):
    ws = _repo(tmp_path)
    (ws / "a.txt").write_text("dirty at start\n")
    before = sorted(p.relative_to(ws).as_posix() for p in (ws / ".git").rglob("*"))
    index = (ws / ".git" / "index").read_bytes()
    tracker = ChangeTracker(ws)
    (ws / "b.txt").write_text("new\n")
    patch, changed = tracker.patch()
    tracker.close()
    assert changed == ["b.txt"] and "dirty at start" not in patch  # the dirty start is the base
    assert sorted(p.relative_to(ws).as_posix() for p in (ws / ".git").rglob("*")) == before
    assert (ws / ".git" / "index").read_bytes() == index


def test_ignored_new_files_leave_out_the_runners_own_and_cap_the_patch(tmp_path, monkeypatch):
    """The runs dir (named by the caller), `.agent-run/` and worktrees are never ignored new files; a file past the
    cap is named at the top of ignored.patch, not copied into it."""
    import runner.report.ignored as ignored_mod

    ws = _repo(tmp_path)
    (ws / ".gitignore").write_text("*\n")  # untracked: ignores itself too
    tracker = ChangeTracker(ws, exclude=("out/runs",))
    for rel, text in {"out/runs/r1/events.jsonl": "{}\n", ".agent-run/worktrees/w/a.txt": "x\n",
                      "out/big.bin": "b" * 64, "out/small.txt": "small\n"}.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(text)
    monkeypatch.setattr(ignored_mod, "MAX_FILE_BYTES", 32)
    found = tracker.ignored()
    tracker.close()
    assert found is not None and found.files == ["out/big.bin", "out/small.txt"]
    # out/ holds the runs dir: not one entry
    assert found.summary() == {"count": 2, "paths": ["out/big.bin", "out/small.txt"]}
    assert found.patch.startswith("ignored.patch leaves out 1 file(s)") and "  out/big.bin\n" in found.patch
    assert "+++ b/out/small.txt" in found.patch and "bbbb" not in found.patch
