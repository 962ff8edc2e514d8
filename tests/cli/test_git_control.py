"""What in `.git` is off limits, through the real CLI (issue 25, item 2): the file tools hard-deny every
path git reads as its own — any path with a `.git` component, and the gitdirs and commondirs `.git` files
name — under the shipped `default` policy, where nothing else stops them."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from runner.engine.cancel import RunCancel
from runner.policy.limits import GIT_CONTROL
from tests.fakes.openai_server import reply

FSMONITOR = '[core]\n\trepositoryformatversion = 0\n\tfsmonitor = "touch PWNED; false"\n'


def _git(ws: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # The workflow's own git, after the run: no global or system config, as on a fresh runner.
    env = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", *args], cwd=ws, env=env, capture_output=True, text=True, timeout=60)


def _errors(r) -> list[str | None]:
    """The error type of each tool result, None for a success."""
    out = []
    for e in r.of_type("tool_result"):
        try:
            out.append(json.loads(e["content"]).get("error", {}).get("type"))
        except (ValueError, AttributeError):
            out.append(None)
    return out


def test_writing_git_commondir_is_denied_so_the_next_git_status_runs_nothing(fake, workspace, agent_run):
    """The attack: a directory with its own `config` (an fsmonitor command), then `.git/commondir`
    pointing at it; the workflow's next `git status` (to commit the agent's work) would run the command."""
    _git(workspace, "init", "-q")
    fake.add(reply(calls=[("write", {"path": "evil/config", "content": FSMONITOR}),
                          ("write", {"path": "evil/objects/.keep", "content": ""}),
                          ("write", {"path": "evil/refs/.keep", "content": ""}),
                          ("write", {"path": ".git/commondir", "content": "../evil\n"})]),
             reply("done"))
    r = agent_run("--policy", "default", "task.md")
    assert _errors(r) == [None, None, None, "ToolNotAllowed"], r.stderr
    assert r.code == 3, r.stderr  # a denied call
    assert not (workspace / ".git" / "commondir").exists()
    [denial] = r.summary["denials"]
    assert denial["rule"]["file"] == "<hard limit>" and denial["rule"]["pattern"] == GIT_CONTROL
    _git(workspace, "status")
    assert not (workspace / "PWNED").exists()


# (path, off limits): one table, walked through both layers. Off limits: every path with a `.git`
# component, and what `.git` files name; not the `.git*` files of the working tree, nor a submodule's files.
TABLE = [
    (".git/commondir", True),
    (".git/modules/x/config", True),
    (".git/config.worktree", True),
    (".git/info/attributes", True),
    (".git/HEAD", True),
    (".git/objects/info/alternates", True),
    ("sub/.git/config", True),  # a nested repository
    ("sub/.git", True),
    ("mod/.git", True),  # a submodule's `.git` file (`gitdir: ../.git/modules/x`)
    ("wt/.git", True),  # a `.git` file naming a gitdir elsewhere in the workspace ...
    ("store/wt.git/config", True),  # ... which is git's too,
    ("store/wt.git/HEAD", True),
    ("store/common.git/config", True),  # and so is the commondir that gitdir names
    (".gitignore", False),
    (".gitattributes", False),
    (".gitmodules", False),
    (".github/workflows/ci.yml", False),
    ("mod/lib.c", False),  # a submodule's working files
    ("wt/main.c", False),
    ("store/notes.txt", False),
]


def _repositories(ws: Path) -> None:
    _git(ws, "init", "-q")
    _git(ws, "init", "-q", "sub")
    for rel in (".git/modules/x/config", ".git/modules/x/HEAD", ".git/info/attributes", ".gitignore",
                ".gitattributes", ".gitmodules", ".github/workflows/ci.yml", "mod/lib.c", "wt/main.c",
                "store/notes.txt", "store/wt.git/config", "store/wt.git/HEAD", "store/common.git/config"):
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text("x\n")
    for rel in (".git/objects/info", "store/wt.git/objects", "store/wt.git/refs"):
        (ws / rel).mkdir(parents=True, exist_ok=True)
    (ws / "mod" / ".git").write_text("gitdir: ../.git/modules/x\n")
    (ws / "wt" / ".git").write_text("gitdir: ../store/wt.git\n")
    (ws / "store" / "wt.git" / "commondir").write_text("../common.git\n")


def test_the_file_tools_and_the_sandbox_agree_on_what_in_git_is_off_limits(
        fake, workspace, agent_run, sandbox_available):
    _repositories(workspace)
    # The file tools: what `policy explain` decides for an edit (the rules a run uses, hard limits last) ...
    explained = {}
    for rel, _ in TABLE:
        r = agent_run("policy", "explain", "--policy", "default", "edit", rel, "--json")
        assert r.code == 0, r.stderr
        data = json.loads(r.stdout)
        explained[rel] = data["decision"] == "deny" and data["rule"]["pattern"] == GIT_CONTROL
    # ... and the tools' own hard limit, checked in the tool itself (whatever the policy said).
    from runner.tools import paths
    from runner.tools.base import ToolContext, ToolError

    refused = {}
    for rel, _ in TABLE:
        try:
            paths.check_writable(ToolContext(workspace=workspace, cancel=RunCancel()), workspace / rel)
            refused[rel] = False
        except ToolError as exc:
            refused[rel] = exc.type == "PathTraversalBlocked"
    # The sandbox: a real bwrap'd `touch` of each path (created when missing, its time set when not).
    script = 'for p in "$@"; do if touch -- "$p" 2>/dev/null; then echo "ok $p"; else echo "ro $p"; fi; done'
    r = agent_run("sandbox", "run", "--policy", "default", "--sandbox", "required", "--",
                  "bash", "-c", script, "touch", *(rel for rel, _ in TABLE))
    assert r.code == 0, r.stderr
    touched = {line[3:]: line.startswith("ro ") for line in r.stdout.splitlines()}
    expected = dict(TABLE)
    assert explained == expected
    assert refused == expected
    assert touched == expected
