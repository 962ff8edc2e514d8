"""A run's MCP servers: which are configured, started before the first request, stopped at the end.

Configuration comes only from trusted places, later winning per server name: the policy's
`mcpServers`, then `AGENT_RUN_MCP_CONFIG` (paths separated by os.pathsep), then each
`--mcp-config FILE`. A workspace `.mcp.json` is never read by itself (docs/threat-model.md).

Each stdio server is a process the runner starts, so it runs inside the run's sandbox
(Sandbox.wrap), with the environment its config gives it and nothing else of the runner's; its
own `sandbox` settings may open the network to it (`"all"`, or an allow-list through an egress
proxy of its own) and make more paths visible. An HTTP server is reached only if the policy allows
its URL (domain `mcp`, target `url:<url>`); being trusted configuration, it may be on loopback.

A server that fails to start is recorded (`mcp_server_failed`, stderr, `summary.mcp`) and the run
goes on without it — unless its config says `"required": true`, which ends the run (exit 2)
before the first request. Its stderr is in RUN_DIR/mcp/<server>.log.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import os
import shutil
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runner.events import McpServerFailed, McpServerStarted, NetworkRequest
from runner.mcp.client import McpError, McpServer
from runner.mcp.config import ServerConfig, load_mcp_config, merge, servers_from_mapping
from runner.mcp.tools import tool_names
from runner.outcome import UsageError
from runner.policy.decide import decide
from runner.policy.jsonc import PolicyError
from runner.policy.model import Target
from runner.sandbox.layout import toolchain_root
from runner.sandbox.proxy import Verdict
from runner.tools.mcp import DEFAULT_CALL_TIMEOUT_S, McpTool

if TYPE_CHECKING:
    from runner.call import CallEnv
    from runner.recorder import Recording

START_TIMEOUT_S = 30.0
ENV_VAR = "AGENT_RUN_MCP_CONFIG"


def configured(policy_section: Any, policy_file: str, files: list[str], environ: dict[str, str]) -> dict[str,
                                                                                                       ServerConfig]:
    """Every configured server, by name. Raises UsageError (`file:line:col: what`) for a bad config."""
    try:
        layers = [servers_from_mapping(policy_section, policy_file, environ)] if policy_section else []
        paths = [p for p in environ.get(ENV_VAR, "").split(os.pathsep) if p] + list(files)
        layers += [load_mcp_config(p, environ) for p in paths]
    except PolicyError as exc:
        raise UsageError(str(exc)) from None
    return merge(*layers)


@dataclass
class McpRuntime:
    rec: Recording
    env: CallEnv
    servers: dict[str, McpServer] = field(default_factory=dict)  # usable now
    down: dict[str, str] = field(default_factory=dict)  # server -> why it is not usable
    report: dict[str, dict[str, Any]] = field(default_factory=dict)  # summary.json `mcp`
    call_timeout_s: float = DEFAULT_CALL_TIMEOUT_S
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def usable(self, name: str) -> McpServer | None:
        with self._lock:
            return self.servers.get(name)

    def why_down(self, name: str) -> str:
        return self.down.get(name, "it is not configured")

    def call_failed(self, name: str, exc: McpError) -> None:
        """A crashed server, or one that stopped speaking MCP, is dropped for the rest of the run (once)."""
        if exc.kind in ("timeout", "rpc_error"):
            return
        with self._lock:
            server = self.servers.pop(name, None)
        if server is None:
            return
        self.down[name] = exc.message
        self.report[name].update(status="failed", phase="call", kind=exc.kind, error=exc.message)
        self.rec.emit(McpServerFailed(server=name, phase="call", kind=exc.kind, message=exc.message,
                                      required=server.config.required))
        print(f"agent-run: warning: {exc}; the run goes on without it", file=sys.stderr)
        server.kill()

    def tools(self) -> list[McpTool]:
        """The model tools, in a stable order (server, then tool): part of the prompt prefix."""
        started = {name: s.tools for name, s in self.servers.items()}
        names = tool_names(started)
        by_pair = {pair: model for model, pair in names.items()}
        out = []
        for server in sorted(started):
            for tool in sorted(started[server], key=lambda t: str(t["name"])):
                out.append(McpTool(by_pair[(server, str(tool["name"]))], server, tool, self))
        return out

    def close(self) -> None:
        for server in list(self.servers.values()):
            server.close()
        self.servers.clear()


def start_all(rec: Recording, env: CallEnv, configs: dict[str, ServerConfig], environ: dict[str, str],
              timeout_s: float = START_TIMEOUT_S) -> McpRuntime:
    """Start every configured server (in name order); UsageError when a `required` one cannot start."""
    runtime = McpRuntime(rec, env)
    rec.closers.insert(0, runtime.close)  # before the sandbox closes: a server is killed with the run
    if not configs:
        return runtime
    rec.extra["mcp"] = runtime.report
    logs = rec.run_dir / "mcp"
    for name in sorted(configs):
        config = configs[name]
        if config.transport == "stdio":  # relative to the workspace, as inside the sandbox
            cwd = rec.workspace / os.path.expanduser(config.cwd) if config.cwd else rec.workspace
            config = dataclasses.replace(config, cwd=str(cwd))
        started = time.monotonic()
        # Never past the run's --timeout: what is left of it bounds each start (then the first request ends it).
        left = rec.ctx.deadline - started if rec.ctx.deadline is not None else timeout_s
        try:
            _allowed(rec, env, config)
            server = McpServer(config, wrap=_wrapper(rec, env, config), log_path=logs / f"{name}.log",
                               start_timeout_s=min(timeout_s, max(left, 0.1)), base_env=_base_env(environ),
                               client_name="agent-run").start()
        except McpError as exc:
            _failed(runtime, config, exc.kind, exc.message)
            continue
        info = server.server_info or {}
        runtime.servers[name] = server
        runtime.report[name] = {"status": "started", "transport": config.transport, "name": info.get("name"),
                                "version": info.get("version"), "tools": len(server.tools)}
        rec.emit(McpServerStarted(server=name, transport=config.transport, name=info.get("name"),
                                  version=info.get("version"), tools=len(server.tools),
                                  duration_s=round(time.monotonic() - started, 4)))
    return runtime


def _failed(runtime: McpRuntime, config: ServerConfig, kind: str, message: str) -> None:
    runtime.down[config.name] = message
    runtime.report[config.name] = {"status": "failed", "phase": "start", "kind": kind, "error": message,
                                   "transport": config.transport}
    runtime.rec.emit(McpServerFailed(server=config.name, phase="start", kind=kind, message=message,
                                     required=config.required))
    if config.required:
        raise UsageError(f"MCP server '{config.name}' is required and did not start: {message} "
                         f"(its log: {runtime.rec.run_dir / 'mcp' / (config.name + '.log')})")
    print(f"agent-run: warning: MCP server '{config.name}' did not start ({kind}): {message}; the run goes on "
          "without its tools", file=sys.stderr)


class _Refused(McpError):
    pass


def _allowed(rec: Recording, env: CallEnv, config: ServerConfig) -> None:
    """An HTTP server is reached only if the policy allows its URL (domain mcp, target url:<url>)."""
    if config.transport != "http":
        return
    from runner.call import decide_and_record

    target = Target("mcp", f"url:{config.url}")
    decision, _ = decide_and_record(env, f"mcp-start-{config.name}", f"mcp__{config.name}", "mcp", [target],
                                    rec.emit)
    if not decision.allowed:
        raise _Refused(config.name, "refused", f"the policy does not allow mcp on url:{config.shown} (add "
                       f'{{"domain": "mcp", "pattern": "url:{config.shown}", "decision": "allow"}})')


def _base_env(environ: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in environ.items() if k in ("PATH", "HOME", "LANG", "TMPDIR")}


def _wrapper(rec: Recording, env: CallEnv, config: ServerConfig) -> Any:
    """The stdio server's process inside the run's sandbox, with its own network and paths if configured."""
    box = rec.ctx.sandbox
    if box is None or not box.active or config.transport != "stdio":
        return None
    own = config.sandbox or {}
    workspace = rec.workspace

    def resolve(paths: list[str]) -> list[Path]:
        return [(workspace / os.path.expanduser(p)).resolve() for p in paths]

    readable = [*resolve(own.get("readOnly", [])), *command_prefixes(config.command or "", env_path(rec, config))]
    layout = box.layout_with(readable, resolve(own.get("writable", [])))
    network = own.get("network")
    share = True if network == "all" else (False if network == "none" else None)
    proxy = None
    if isinstance(network, dict):
        proxy = box.own_proxy(config.name, _server_net(rec, env, config.name, network["allow"]))
        share = False

    def wrap(argv: list[str], environ: dict[str, str]) -> tuple[list[str], dict[str, str]]:
        return box.wrap(argv, environ, layout=layout, share_net=share, proxy=proxy)

    return wrap


def env_path(rec: Recording, config: ServerConfig) -> str:
    return config.env.get("PATH") or os.environ.get("PATH", "")


def command_prefixes(command: str, path: str) -> list[Path]:
    """The install a server's command belongs to (a venv, a node install, and what its interpreter links to),
    read-only: configuring a server is saying it may run. The sandbox's own rule decides how much that is
    (runner/sandbox/layout.py toolchain_root: never $HOME, ~/.local or ~/.config whole)."""
    found = shutil.which(command, path=path) if command else None
    if found is None:
        return []
    home = os.path.normpath(os.environ.get("HOME") or "/root")
    out: list[Path] = []
    for exe in (os.path.abspath(found), os.path.realpath(found)):
        root = toolchain_root(os.path.dirname(exe), home)
        if root and not any(root == d or root.startswith(d + "/") for d in ("/usr", "/bin", "/sbin")) \
                and Path(root) not in out:
            out.append(Path(root))
    return out


def _server_net(rec: Recording, env: CallEnv, name: str, allow: list[str]) -> Any:
    """A server's own allow-list (trusted config), then the run's `network` rules for anything else."""

    def verdict(host: str, port: int) -> Verdict:
        listed = next((h for h in allow if fnmatch.fnmatch(host, h) or fnmatch.fnmatch(f"{host}:{port}", h)), None)
        if listed is not None:
            rec.emit(NetworkRequest(call_id=f"mcp-{name}", host=host, port=port, decision="allow",
                                    rule={"file": f"mcpServers.{name}.sandbox.network", "index": allow.index(listed),
                                          "line": 0, "domain": "network", "pattern": listed, "decision": "allow"}))
            return Verdict(True, not any(c in listed for c in "*?"), f"mcpServers.{name}.sandbox.network")
        d = decide(env.policy, "network", [Target("network", f"net:{host}:{port}")])
        rec.emit(NetworkRequest(call_id=f"mcp-{name}", host=host, port=port, decision=d.effective,
                                rule=d.deciding.rule.describe() if d.deciding.rule else None))
        from runner.sandbox.session import net_verdict

        return net_verdict(d)

    return verdict
