"""runner/mcp/runtime.py: what a server's command and settings make visible, its network, its tools, and the
run's deadline — over a stand-in Recording (the CLI tests run the real one)."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from runner.core.events import McpServerFailed, NetworkRequest, PermissionDecision
from runner.core.outcome import UsageError
from runner.engine.call import CallEnv
from runner.engine.cancel import RunCancel
from runner.engine.lifecycle import Lifecycle
from runner.mcp.config import ServerConfig
from runner.mcp.runtime import McpRuntime, _server_net, _wrapper, command_prefixes, env_path, start_all
from runner.mcp.tools import MAX_DESCRIPTION
from runner.policy.load import load_policy
from runner.policy.sandbox_config import SandboxConfig, network_rules
from runner.sandbox.runtime import INSIDE, PROXY_VARS, Sandbox, open_sandbox
from runner.tools.base import ToolContext
from runner.tools.registry import core_tools
from tests.fakes.wait import HANG_S, until
from tests.mcp.conftest import SERVERS


@pytest.fixture
def runner_home(tmp_path: Path) -> tuple[Path, Path]:
    """A GitHub runner's shape: HOME, the workspace at ~/work/r/r, step scripts in ~/work/_temp."""
    home = tmp_path / "home"
    ws = home / "work" / "r" / "r"
    (ws / ".venv" / "bin").mkdir(parents=True)
    (home / "work" / "_temp").mkdir()
    return home, ws


def _executable(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


class Rec(SimpleNamespace):
    """The parts of a Recording that start_all and the wrapper use."""

    def __init__(self, tmp_path: Path, workspace: Path, *, deadline: float | None = None,
                 sandbox: Sandbox | None = None) -> None:
        super().__init__(ctx=SimpleNamespace(cancel=RunCancel(deadline=deadline), sandbox=sandbox),
                         workspace=workspace, run_dir=tmp_path / "run", lifecycle=Lifecycle([]), events=[])
        self.emit = self.events.append


def _call_env(tmp_path: Path, workspace: Path, rules: list[dict[str, str]] | None = None) -> CallEnv:
    policy = tmp_path / "p.jsonc"
    policy.write_text(json.dumps({"extends": "default", "permission": {"rules": rules or []}}))
    return CallEnv(core_tools(), load_policy(str(policy)), ToolContext(workspace=workspace, cancel=RunCancel()), "run")


# --- H2: a server's command adds its install, never the workspace's surroundings -----------------------------


def test_a_workspace_command_adds_nothing(runner_home: tuple[Path, Path]) -> None:
    home, ws = runner_home
    secret = _executable(home / "work" / "_temp" / "step.sh")
    (ws / ".venv" / "bin" / "python").symlink_to(secret)  # a committed link, out of the workspace
    _executable(ws / "node_modules" / ".bin" / "server")
    path = f"{ws / 'node_modules' / '.bin'}:/usr/bin"
    assert command_prefixes(".venv/bin/python", path, str(home), ws, str(ws)) == []
    assert command_prefixes(str(ws / ".venv" / "bin" / "python"), path, str(home), ws) == []
    assert command_prefixes("server", path, str(home), ws) == []  # found on PATH, in the workspace


def test_a_host_command_adds_its_install_but_not_a_link_through_the_workspace(runner_home: tuple[Path, Path],
                                                                              tmp_path: Path) -> None:
    home, ws = runner_home
    real = _executable(tmp_path / "opt" / "node" / "bin" / "node")
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "node").symlink_to(real)
    prefixes = command_prefixes("node", str(tmp_path / "bin"), str(home), ws)
    # Where it is found (only its bin: tmp_path holds the workspace too), and where it links to.
    assert prefixes == [tmp_path / "bin", tmp_path / "opt" / "node"]
    # A host link into the workspace, which the workspace then points anywhere: followed no further.
    (ws / "tool").symlink_to(home / "work" / "_temp" / "step.sh")
    _executable(home / "work" / "_temp" / "step.sh")
    (tmp_path / "bin" / "tool").symlink_to(ws / "tool")
    assert command_prefixes("tool", str(tmp_path / "bin"), str(home), ws) == [tmp_path / "bin"]


def test_a_command_in_a_tree_holding_the_workspace_shows_only_its_own_directory(
        runner_home: tuple[Path, Path]) -> None:
    home, ws = runner_home
    _executable(home / "work" / "bin" / "server")
    assert command_prefixes("server", str(home / "work" / "bin"), str(home), ws) == [home / "work" / "bin"]


def test_the_command_is_looked_up_on_the_trusted_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/from/the/process")
    assert env_path(_server(), {"PATH": "/trusted"}) == "/trusted"
    assert env_path(dataclasses.replace(_server(), env={"PATH": "/own"}), {"PATH": "/trusted"}) == "/own"


# --- the wrapper inside the real sandbox --------------------------------------------------------------------


@pytest.fixture
def allow_box(tmp_path: Path, sandbox_available: None) -> Iterator[tuple[Sandbox, Path]]:
    ws = tmp_path / "ws"
    ws.mkdir()
    box = open_sandbox(SandboxConfig(mode="required", network="allow", allow=("pypi.org",)), workspace=ws,
                       protected=[], readable=[], writable=[], environ=os.environ)
    try:
        yield box, ws
    finally:
        box.close()


def _server(**sandbox: Any) -> ServerConfig:
    return ServerConfig(name="s", transport="stdio", command=sys.executable, args=(str(SERVERS / "toolbox.py"),),
                        sandbox=sandbox)


def test_network_none_means_no_network_even_when_the_run_has_a_proxy(allow_box: tuple[Sandbox, Path],
                                                                     tmp_path: Path) -> None:
    box, ws = allow_box
    rec = Rec(tmp_path, ws, sandbox=box)
    argv, env = _wrapper(rec, None, _server(network="none"), dict(os.environ))(["true"], {})
    assert f"{INSIDE}/proxy.sock" not in argv and "--share-net" not in argv
    assert not set(PROXY_VARS) & set(env)
    # Without a setting of its own, the server gets the run's network (its proxy), as before.
    argv, env = _wrapper(rec, None, _server(), dict(os.environ))(["true"], {})
    assert f"{INSIDE}/proxy.sock" in argv and set(PROXY_VARS) <= set(env)


def test_a_servers_writable_workspace_symlink_out_is_a_refused_start(allow_box: tuple[Sandbox, Path],
                                                                    tmp_path: Path) -> None:
    box, ws = allow_box
    (tmp_path / "runner-home").mkdir()
    (ws / "data").symlink_to(tmp_path / "runner-home")
    rec = Rec(tmp_path, ws, sandbox=box)
    config = dataclasses.replace(_server(writable=["data"]), required=True)
    with pytest.raises(UsageError) as info:
        start_all(rec, None, {"s": config}, dict(os.environ), timeout_s=20)  # type: ignore[arg-type]
    assert "symlink" in str(info.value) and "mcpServers.s.sandbox.writable" in str(info.value)
    failed = [e for e in rec.events if isinstance(e, McpServerFailed)]
    assert [(e.server, e.kind) for e in failed] == [("s", "refused")]


def test_each_server_has_a_home_of_its_own_that_no_one_else_sees(allow_box: tuple[Sandbox, Path],
                                                                 tmp_path: Path) -> None:
    """One principal, one home: the commands' HOME, another server's and this one's are three, and from inside
    the real sandbox each server sees its own only (a `~/.gitconfig` planted by a command never reaches it)."""
    box, ws = allow_box
    assert box.layout is not None and box.scratch is not None
    (box.scratch / "home" / ".gitconfig").write_text("[core]\n\tfsmonitor = planted\n")
    rec = Rec(tmp_path, ws, sandbox=box)
    homes = []
    for name in ("a", "b"):
        wrap = _wrapper(rec, None, dataclasses.replace(_server(network="none"), name=name), dict(os.environ))
        argv, env = wrap(["sh", "-c", 'ls -A "$HOME"; ls "$1" 2>&1; echo "$HOME|$TMPDIR"', "sh",
                          str(box.scratch / "home")], {"PATH": "/usr/bin:/bin"})
        out = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60).stdout.strip().splitlines()
        assert out[0].startswith("ls: cannot access"), out  # an empty HOME; the commands' is not there
        homes.append(out[-1])
    commands = f"{box.layout.env['HOME']}|{box.layout.env['TMPDIR']}"
    assert len({*homes, commands}) == 3
    for home in homes:  # and neither is visible to the commands
        argv, env = box.wrap(["ls", home.split("|")[0]], {"PATH": "/usr/bin:/bin"})
        assert subprocess.run(argv, env=env, capture_output=True, timeout=60).returncode != 0


# --- S2: the server's own allow-list is decided and recorded like the run's ----------------------------------


def test_a_servers_connections_are_recorded_decisions(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    rec = Rec(tmp_path, ws)
    env = _call_env(tmp_path, ws, [{"domain": "network", "pattern": "net:files.example.org:443", "decision": "deny"}])
    rules = network_rules(SandboxConfig(network="allow", allow=("registry.npmjs.org",)), "mcpServers.s.sandbox.network")
    verdict = _server_net(rec, env, "s", rules)
    allowed, denied = verdict("registry.npmjs.org", 443), verdict("files.example.org", 443)
    assert allowed.allowed and allowed.exact and not denied.allowed
    decisions = [e for e in rec.events if isinstance(e, PermissionDecision)]
    assert [(d.decision, d.call_id, d.tool) for d in decisions] == [("allow", "mcp-s", "mcp__s"),
                                                                    ("deny", "mcp-s", "mcp__s")]
    assert decisions[0].rule["file"] == "mcpServers.s.sandbox.network"
    requests = [e for e in rec.events if isinstance(e, NetworkRequest)]
    assert [(r.host, r.decision) for r in requests] == [("registry.npmjs.org", "allow"), ("files.example.org", "deny")]


# --- M6, S1: the model tools come from specs_for -------------------------------------------------------------


def test_tools_skip_unusable_names_and_cap_descriptions() -> None:
    runtime = McpRuntime(None, None)  # type: ignore[arg-type]
    runtime.servers = {"s": SimpleNamespace(config=SimpleNamespace(read_only_tools=()), tools=[  # type: ignore[dict-item]
        {"name": "", "description": "no name"}, {"name": None}, {"description": "nameless"},
        {"name": "long", "description": "x" * 10_000, "inputSchema": {"$schema": "x", "properties": {}}},
        {"name": "plain"}])}
    tools = runtime.tools()
    assert [(t.name, t.server, t.tool) for t in tools] == [("mcp__s__long", "s", "long"),
                                                            ("mcp__s__plain", "s", "plain")]
    assert len(tools[0].description) == MAX_DESCRIPTION
    assert tools[0].spec()["function"]["parameters"] == {"type": "object", "properties": {}}
    assert tools[1].description == "Tool 'plain' of MCP server 's'."


# --- L1: the run's deadline -----------------------------------------------------------------------------------


def test_no_server_starts_once_the_deadline_has_passed(tmp_path: Path) -> None:
    rec = Rec(tmp_path, tmp_path, deadline=time.monotonic() - 1)
    configs = {"a": dataclasses.replace(_server(), name="a"),
               "b": dataclasses.replace(_server(), name="b", required=True)}
    with pytest.raises(UsageError) as info:
        start_all(rec, None, configs, dict(os.environ))  # type: ignore[arg-type]
    assert "'b' is required and did not start" in str(info.value) and "--timeout" in str(info.value)
    failed = [(e.server, e.kind) for e in rec.events if isinstance(e, McpServerFailed)]
    assert failed == [("a", "timeout"), ("b", "timeout")]
    assert not (tmp_path / "run" / "mcp").exists()  # nothing was started, not even its log


class SlowToClose:
    """A server whose close() ends only once every server's close has begun (a barrier): closed one after
    another, the first would wait in vain (until the barrier breaks, after HANG_S)."""

    def __init__(self, name: str, all_closing: threading.Barrier) -> None:
        self.name, self.killed, self.waits, self.together = name, False, [], False
        self.all_closing = all_closing

    def close(self, timeout_s: float) -> None:
        self.waits.append(timeout_s)
        try:
            self.all_closing.wait(HANG_S)
            self.together = True
        except threading.BrokenBarrierError:
            pass

    def kill(self) -> None:
        self.killed = True


def test_servers_close_together_and_briefly_past_the_deadline(tmp_path: Path) -> None:
    runtime = McpRuntime(Rec(tmp_path, tmp_path, deadline=time.monotonic() - 1), None)  # type: ignore[arg-type]
    all_closing = threading.Barrier(6)
    servers = [SlowToClose(f"s{i}", all_closing) for i in range(6)]
    runtime.servers = {s.name: s for s in servers}  # type: ignore[misc]
    runtime.close()
    # runtime.close() waits for the closes a bounded time only: on a loaded machine they may end after it.
    until(lambda: not [t for t in threading.enumerate() if t.name.startswith("mcp-close-")], "every close to end")
    assert all(s.together for s in servers)  # together, not one after another: all were closing at once
    assert all(s.waits == [1.0] and s.killed for s in servers)
    assert runtime.servers == {}
