"""A workspace that is a subfolder of a repository (a monorepo package, `--workspace services/api`): the
changes, the state the run left and a resume's check all name files relative to the workspace, as a
workspace that is its repository's top does. git names files from the repository's top unless told
otherwise, so `notes.txt` used to be recorded as `ws/notes.txt`, and a resume looked for `ws/ws/notes.txt`."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.fakes.openai_server import reply


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=t", *args], cwd=cwd, check=True,
                   capture_output=True)


def test_a_subfolder_workspace_names_its_files_from_itself(fake, workspace, agent_run, tmp_path):
    repo = tmp_path  # the workspace fixture is tmp_path/ws: the repository's top is one up
    (workspace / "notes.txt").write_text("v1\n")
    (repo / "outside.txt").write_text("not the workspace's\n")
    _git(repo, "init", "-q")
    _git(repo, "add", "ws/notes.txt", "ws/task.md", "outside.txt")
    _git(repo, "commit", "-qm", "base")
    (repo / "outside.txt").write_text("changed by someone else, outside the workspace\n")
    fake.add(reply(calls=[("read", {"path": "notes.txt"}), ("write", {"path": "notes.txt", "content": "v2\n"}),
                          ("write", {"path": "new.txt", "content": "new\n"})]))
    first = agent_run("--max-turns", "1", "task.md")
    assert first.code == 5, first.stderr
    assert sorted(first.summary["changed_files"]) == ["new.txt", "notes.txt"]
    state = json.loads((first.run_dir / "workspace.json").read_text())
    assert sorted(state["files"]) == ["new.txt", "notes.txt"] and None not in state["files"].values()
    patch = (first.run_dir / "changes.patch").read_text()
    assert "a/notes.txt" in patch and "ws/notes.txt" not in patch and "outside.txt" not in patch

    fake.add(reply("continued"))
    resumed = agent_run("resume", str(first.run_dir))  # the workspace is as the run left it
    assert resumed.code == 0, resumed.stderr

    # A fresh checkout of the base with the run's changes applied: the patch lands inside the workspace.
    _git(repo, "checkout", "-q", "--", "ws/notes.txt")
    (workspace / "new.txt").unlink()
    fake.add(reply("continued again"))
    applied = agent_run("resume", str(first.run_dir), "--apply-changes")
    assert applied.code == 0, applied.stderr
    assert (workspace / "notes.txt").read_text() == "v2\n" and (workspace / "new.txt").read_text() == "new\n"
