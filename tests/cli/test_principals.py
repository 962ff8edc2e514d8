"""One principal, one home (docs/threat-model.md): an MCP stdio server never shares a HOME with the commands,
so what a command plants there (`~/.gitconfig` with a `core.fsmonitor`) is not run by the server's own git with
the server's secret environment. Through the real CLI, a real stdio server and the real sandbox."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fakes.openai_server import reply

SERVERS = Path(__file__).parents[1] / "mcp" / "servers"
SECRET = "mcp-secret-5f0c9a1e77"


def git_repo(workspace: Path) -> None:
    """The workspace as a checkout with one commit, made with an empty git configuration of the test's own."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(workspace.parent), "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_CONFIG_GLOBAL": "/dev/null"}
    for argv in (["init", "-q", "-b", "main"], ["add", "-A"],
                 ["-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "start"]):
        subprocess.run(["git", *argv], cwd=workspace, env=env, check=True, capture_output=True, timeout=60)


def box_server(workspace: Path, **env: str) -> str:
    config = {"command": sys.executable, "args": [str(SERVERS / "toolbox.py")],
              "sandbox": {"readOnly": [str(SERVERS)]}, "env": env}
    (workspace.parent / "mcp.json").write_text(json.dumps({"mcpServers": {"box": config}}))
    return str(workspace.parent / "mcp.json")


def tool_output(fake, request: int) -> str:
    return fake.requests[request]["messages"][-1]["content"]


@pytest.mark.usefixtures("sandbox_available")
def test_a_servers_git_does_not_run_the_fsmonitor_a_command_planted_in_home(fake, workspace, agent_run):
    leak = workspace / "leak.txt"
    # Code from the pull request that a build command runs (a test runner runs agent-written code by design).
    (workspace / "plant.sh").write_text(f"printf '%s\\n' '[core]' '\tfsmonitor = \"env > {leak}; false\"' "
                                        '> "$HOME/.gitconfig"\necho "home=$HOME"\n')
    git_repo(workspace)
    plant = "sh plant.sh"
    fake.add(reply(calls=[("bash", {"command": plant})]),
             reply(calls=[("mcp__box__git_status", {})]),
             reply(calls=[("bash", {"command": "cat leak.txt; ls -a \"$HOME\""})]),
             reply("done"))
    r = agent_run("--sandbox", "required", "--mcp-config", box_server(workspace, SERVER_SECRET=SECRET),
                  "--approve", "bash:shell:*", "--approve", "edit:fs:**", "--approve", "mcp:mcp:box/*", "task.md")
    assert r.code == 0, r.stderr
    planted = tool_output(fake, 1)
    assert "home=" in planted, planted
    status = json.loads(tool_output(fake, 2))
    assert status["code"] == 0, status
    command_home = planted.split("home=", 1)[1].split()[0]
    assert status["home"] != command_home  # a HOME of the server's own ...
    assert not status["home"].startswith(str(Path(command_home).parent))  # ... not beside the commands' either
    assert not leak.exists(), leak.read_text()[:500]
    seen = json.dumps(fake.requests) + (r.run_dir / "events.jsonl").read_text()
    assert SECRET not in seen
