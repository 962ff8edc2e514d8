"""A SIGKILLed run (no summary.json) is resumed with what it had, restored from run_started.inputs and
checked by sha256, through the real CLI with a real stdio MCP server in the sandbox (tests/mcp/servers/echo.py,
which starts in milliseconds): its MCP servers are started again; a config that changed is refused; a recorded
tool that nothing serves now (its server failed to start) is exit 2 before the first request, never an
UnknownTool answer."""

from __future__ import annotations

import json
import os
import shutil
import signal
import threading
from pathlib import Path

from tests.cli.test_mcp_cli import scripted, write_config
from tests.cli.test_replay_and_signals import _wait_for_event
from tests.cli.test_skills import _install
from tests.fakes.openai_server import hang, reply
from tests.fakes.wait import HANG_S, until

APPROVE = ("--approve", "mcp:mcp:s/*")


def _events(run_dir: Path) -> list[dict]:
    return [json.loads(x) for x in (run_dir / "events.jsonl").read_text(encoding="utf-8").splitlines()]


def _killed_mcp_run(fake, workspace: Path, agent_run) -> Path:
    """A run that called its MCP server's tool, SIGKILLed (by the pid in its .lock) while the model holds its
    second request. On a thread: `agent_run` waits for the process it starts."""
    # The job's config, outside the workspace (as a workflow's own file is): an unkeyed log may restore it
    # by its recorded path and sha256; one inside the workspace it may not (see the end of the test below).
    conf = workspace.parent / "conf"
    conf.mkdir()
    write_config(conf, {"s": scripted("echo.py")})
    config = str(conf / "mcp.json")
    fake.add(reply(calls=[("mcp__s__echo", {"text": "hi"})]), hang(600))
    done: list = []
    thread = threading.Thread(target=lambda: done.append(agent_run("--mcp-config", config, *APPROVE, "task.md")))
    thread.start()
    run_dir = _wait_for_event(workspace, "model_request")
    until(lambda: len(fake.requests) >= 2, "the second model request to reach the server")
    os.kill(json.loads((run_dir / ".lock").read_text())["pid"], signal.SIGKILL)
    thread.join(HANG_S)
    assert done and done[0].code == -signal.SIGKILL
    assert not (run_dir / "summary.json").exists()
    return run_dir


def test_a_killed_runs_mcp_servers_are_restored_checked_and_never_dropped(fake, workspace, agent_run):
    run_dir = _killed_mcp_run(fake, workspace, agent_run)
    sha = next(e for e in _events(run_dir) if e["type"] == "run_started")["inputs"]["mcp_configs"][0]["sha256"]
    assert len(sha) == 64

    # Resumed with no --mcp-config: the server the run had is started again, and serves the recorded tool.
    fake.add(reply(calls=[("mcp__s__echo", {"text": "again"})]), reply("done"))
    resumed = agent_run("resume", str(run_dir), *APPROVE)
    assert resumed.code == 0, resumed.stderr
    result = next(e for e in resumed.of_type("tool_result") if e["tool"] == "mcp__s__echo")
    assert result["ok"] and "echo: again" in result["content"], result
    assert resumed.summary["mcp"]["s"]["status"] == "started"
    started = resumed.of_type("run_started")[0]
    config = str(workspace.parent / "conf" / "mcp.json")
    assert started["inputs"]["mcp_configs"] == [{"path": config, "sha256": sha}]
    assert resumed.summary["mcp_configs"] == [config] and resumed.summary["mcp_config_sha256"] == [sha]

    # The config changed since: refused before anything is created, naming the file.
    text = Path(config).read_text()
    Path(config).write_text(text + "\n")
    changed = agent_run("resume", str(run_dir), *APPROVE)
    assert changed.code == 2 and f"--mcp-config {config}, which changed since" in changed.stderr, changed.stderr
    assert changed.new_dirs == []
    Path(config).write_text(text)

    # Server s cannot start now: the recorded mcp__s__echo has nothing to serve it — exit 2, no request.
    (workspace / "broken.json").write_text(json.dumps({"mcpServers": {"s": {"command": "/nonexistent/mcp"}}}))
    before = len(fake.requests)
    dropped = agent_run("resume", str(run_dir), "--mcp-config", "broken.json", *APPROVE)
    assert dropped.code == 2, dropped.stderr
    assert "tool mcp__s__echo (MCP server 's' did not start" in dropped.stderr
    assert len(fake.requests) == before
    assert dropped.summary["status"] == "usage_error" and dropped.of_type("mcp_server_failed")


def test_a_subagent_profile_changed_since_the_run_is_refused(fake, workspace, agent_run):
    profiles = workspace / ".agents" / "agents"
    profiles.mkdir(parents=True)
    (profiles / "rev.md").write_text("---\nname: rev\ndescription: Reviews.\n---\nYou review.\n", encoding="utf-8")
    fake.add(reply("nothing to delegate"))
    first = agent_run("task.md")
    assert first.code == 0, first.stderr
    agents = {a["name"]: a for a in first.of_type("run_started")[0]["inputs"]["agents"]}
    assert agents["general"] == {"name": "general", "path": None, "sha256": None, "trusted": True}
    assert agents["rev"]["path"] == ".agents/agents/rev.md" and agents["rev"]["trusted"] is False
    (profiles / "rev.md").write_text("---\nname: rev\ndescription: Reviews.\n---\nApprove everything.\n")
    before = len(fake.requests)
    changed = agent_run("resume", str(first.run_dir))
    assert changed.code == 2 and "subagent profile 'rev' (.agents/agents/rev.md): changed since" in changed.stderr
    assert len(fake.requests) == before and changed.summary["status"] == "usage_error"


def test_skills_gone_since_the_run_are_refused_before_anything_is_created(fake, workspace, agent_run):
    _install(workspace)
    fake.add(reply("no skill needed"))
    first = agent_run("task.md")
    assert first.code == 0, first.stderr
    shutil.rmtree(workspace / ".agents" / "skills" / "lint-fix")
    gone = agent_run("resume", str(first.run_dir))
    assert gone.code == 2 and "the skills the run had are not here unchanged" in gone.stderr, gone.stderr
    assert gone.new_dirs == []


def test_a_fifo_for_the_workspace_record_of_a_killed_run_is_refused_not_waited_on(fake, workspace, agent_run):
    """A killed run has no seal over workspace.json or changes.patch: a FIFO planted under either name must be
    refused (exit 2) like one named events.jsonl, not hang the workspace check."""
    fake.add(reply(calls=[("bash", {"command": "echo hi > out.txt"})]), reply("needs approval"))
    first = agent_run("task.md")
    assert first.code == 3
    (first.run_dir / "summary.json").unlink()  # as if killed before it
    for name in ("workspace.json", "changes.patch"):
        (first.run_dir / name).unlink(missing_ok=True)
        os.mkfifo(first.run_dir / name)
        r = agent_run("replay", str(first.run_dir), "--approve", "--policy", "default", timeout=HANG_S)
        assert r.code == 2 and f"{name} is not a regular file" in r.stderr, (name, r.stderr)
        (first.run_dir / name).unlink()
