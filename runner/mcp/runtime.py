"""A run's MCP servers: which are configured, started before the first request, stopped at the end.

Configuration comes only from trusted places, later winning per server name: the policy's
`mcpServers`, then `AGENT_RUN_MCP_CONFIG` (paths separated by os.pathsep), then each
`--mcp-config FILE`. A workspace `.mcp.json` is never read by itself (docs/threat-model.md).

Each stdio server is a process the runner starts, so it runs inside the run's sandbox
(Sandbox.wrap), with the environment its config gives it and nothing else of the runner's; its
own `sandbox` settings may open the network to it (`"all"`, or an allow-list through an egress
proxy of its own) and make more paths visible. An HTTP server is reached only if the policy allows
its URL (domain `mcp`, target `url:<url>`) and its host (`net:HOST:PORT`); being trusted configuration, it may
be on loopback.

A server that fails to start is recorded (`mcp_server_failed`, stderr, `summary.mcp`) and the run
goes on without it — unless its config says `"required": true`, which ends the run (exit 2)
before the first request. Its stderr is in RUN_DIR/mcp/<server>.log, masked with the run's masker.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runner.core.events import McpServerFailed, McpServerStarted, NetworkRequest
from runner.core.outcome import UsageError
from runner.mcp.client import CLOSE_WAIT_S, McpError, McpServer
from runner.mcp.config import ServerConfig, load_mcp_config, merge, servers_from_mapping
from runner.mcp.tool import DEFAULT_CALL_TIMEOUT_S, McpTool
from runner.mcp.tools import specs_for, tool_names
from runner.policy.egress import Verdict, net_verdict, url_net_target
from runner.policy.jsonc import PolicyError
from runner.policy.model import Target
from runner.policy.sandbox_config import SandboxConfig, SandboxConfigError, net_target, network_rules
from runner.record.integrity import AUDIT_KEY_ENV
from runner.sandbox.layout import shows, toolchain_root
from runner.sandbox.paths import extra_paths
from runner.sandbox.runtime import RUN_PROXY, Sandbox

if TYPE_CHECKING:
    from runner.engine.call import CallEnv
    from runner.engine.recorder import Recording

START_TIMEOUT_S = 30.0
LATE_CLOSE_S = 1.0  # past the run's deadline, what a server gets to exit before its SIGKILL
ENV_VAR = "AGENT_RUN_MCP_CONFIG"


def configured(policy_section: Any, policy_file: str, files: list[str], environ: dict[str, str]) -> dict[str,
                                                                                                       ServerConfig]:
    """Every configured server, by name. Raises UsageError (`file:line:col: what`) for a bad config.
    `${AGENT_RUN_AUDIT_KEY}` is as if unset: no server is handed the key the run's log is chained with."""
    environ = {k: v for k, v in environ.items() if k != AUDIT_KEY_ENV}
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
    _dropped: list[McpServer] = field(default_factory=list, repr=False)  # closed by close() too

    def usable(self, name: str) -> McpServer | None:
        with self._lock:
            return self.servers.get(name)

    def read_only(self, name: str) -> bool | tuple[str, ...]:
        """The trusted config's `readOnlyTools` for this server."""
        server = self.servers.get(name)
        return server.config.read_only_tools if server is not None else ()

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
        # Closed too, not only killed: its pipes, its loop thread and its log (finished with its tail) are let
        # go now, off the calling thread; close() waits for it at the end of the run.
        with self._lock:
            self._dropped.append(server)
        threading.Thread(target=server.close, kwargs={"timeout_s": LATE_CLOSE_S}, name=f"mcp-drop-{name}",
                         daemon=True).start()

    def tools(self) -> list[McpTool]:
        """The model tools, in a stable order (server, then tool): part of the prompt prefix. specs_for is the
        one place that names, describes and sanitises them (and skips a tool without a usable name)."""
        started = {name: s.tools for name, s in self.servers.items()}
        pairs = tool_names(started)
        return [McpTool(spec["function"], *pairs[spec["function"]["name"]], self) for spec in specs_for(started)]

    def close(self) -> None:
        """Every server at once, each bounded: closing one after another would add ~6 s per server past
        --timeout. Past the deadline a server gets LATE_CLOSE_S before its SIGKILL."""
        with self._lock:
            servers = [*self.servers.values(), *self._dropped]
            self.servers.clear()
            self._dropped.clear()
        if not servers:
            return
        deadline = self.rec.ctx.cancel.deadline
        wait = LATE_CLOSE_S if deadline is not None and time.monotonic() >= deadline else CLOSE_WAIT_S
        threads = [threading.Thread(target=s.close, kwargs={"timeout_s": wait}, name=f"mcp-close-{s.name}",
                                    daemon=True) for s in servers]
        for t in threads:
            t.start()
        until = time.monotonic() + wait + 2.0  # close() itself adds a SIGKILL and a 1 s join
        for t in threads:
            t.join(timeout=max(until - time.monotonic(), 0.0))
        for s in servers:
            s.kill()  # whatever did not finish closing: no process outlives the run


def start_all(rec: Recording, env: CallEnv, configs: dict[str, ServerConfig], environ: dict[str, str],
              timeout_s: float = START_TIMEOUT_S) -> McpRuntime:
    """Start every configured server (in name order); UsageError when a `required` one cannot start.

    `environ`: the trusted environment (the process's, over --env-file files): the servers' base
    environment (McpServer keeps PATH, HOME, LANG and TMPDIR of it) and where their commands are found."""
    runtime = McpRuntime(rec, env)
    rec.lifecycle.on_close(runtime.close, first=True)  # before the sandbox closes: a server is killed with the run
    if not configs:
        return runtime
    rec.lifecycle.section("mcp", runtime.report)
    logs = rec.run_dir / "mcp"
    for name in sorted(configs):
        config = configs[name]
        if config.transport == "stdio":  # relative to the workspace, as inside the sandbox
            cwd = rec.workspace / os.path.expanduser(config.cwd) if config.cwd else rec.workspace
            config = dataclasses.replace(config, cwd=str(cwd))
        started = time.monotonic()
        # Never past the run's --timeout: what is left of it bounds each start (then the first request ends it).
        deadline = rec.ctx.cancel.deadline
        left = deadline - started if deadline is not None else timeout_s
        if left <= 0:
            _failed(runtime, config, "timeout", "not started: the run's --timeout passed first")
            continue
        try:
            _allowed(rec, env, config)
            server = McpServer(config, wrap=_wrapper(rec, env, config, environ), log_path=logs / f"{name}.log",
                               start_timeout_s=min(timeout_s, left), base_env=environ, masker=rec.masker,
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
    """An HTTP server is reached only if the policy allows its URL (domain mcp, target url:<url>) and the host it
    connects to (`net:HOST:PORT`, as a web_fetch is decided: the default policy allows no host). The URL as the
    configuration writes it, `${VAR}`s unexpanded, with no credentials, query or fragment (config.policy_url).
    Never the expanded URL: a token in its query would be in the permission_decision, the denial and the
    replay command, and a policy would have to name the secret to allow it. The host and port are the expanded
    URL's: they are where the connection goes."""
    if config.transport != "http":
        return
    from runner.engine.call import decide_and_record

    targets = [Target("mcp", f"url:{config.policy_url}")]
    net = url_net_target(config.url or "")
    if net is not None:
        targets.append(net)
    decision, _ = decide_and_record(env, f"mcp-start-{config.name}", f"mcp__{config.name}", "mcp", targets,
                                    rec.emit)
    if not decision.allowed:
        target = decision.deciding.target
        domain = "mcp" if target.domain == "mcp" else "network"
        raise _Refused(config.name, "refused", f"the policy does not allow {domain} on {target.target} (add "
                       f'{{"domain": "{domain}", "pattern": "{target.target}", "decision": "allow"}})')


def _wrapper(rec: Recording, env: CallEnv, config: ServerConfig, environ: dict[str, str]) -> Any:
    """The stdio server's process inside the run's sandbox, with its own network and paths if configured.
    Raises _Refused when its own settings cannot be honoured safely (a workspace symlink out of the workspace)."""
    box = rec.ctx.sandbox
    if not isinstance(box, Sandbox) or not box.active or config.transport != "stdio":
        return None
    own = config.sandbox or {}
    where = f"mcpServers.{config.name}.sandbox"
    try:
        read_only = extra_paths(own.get("readOnly", []), rec.workspace, f"{where}.readOnly")
        writable = extra_paths(own.get("writable", []), rec.workspace, f"{where}.writable")
        network = own.get("network")
        rules = network_rules(SandboxConfig(network="allow", allow=tuple(network["allow"])),
                              f"{where}.network") if isinstance(network, dict) else []
    except SandboxConfigError as exc:
        raise _Refused(config.name, "refused", str(exc)) from None
    prefixes = command_prefixes(config.command or "", env_path(config, environ), environ.get("HOME") or "/root",
                                rec.workspace, config.cwd)
    # Its own HOME and TMPDIR, never the commands': a `~/.gitconfig` a command planted (an fsmonitor, an
    # alias) would otherwise run inside the server's git, with the server's secret environment.
    layout = box.layout_with([*read_only, *prefixes], writable, scratch=box.own_scratch(config.name))
    if layout is not None and config.cwd:  # bwrap starts a process in the workspace unless told otherwise
        if not shows(layout, config.cwd):
            raise _Refused(config.name, "refused", f"its cwd {config.cwd} is not visible inside the sandbox (add it "
                           f"to {where}.readOnly or {where}.writable)")
        layout = dataclasses.replace(layout, chdir=os.path.normpath(config.cwd))
    share: bool | None = None  # the run's network ...
    proxy: Any = RUN_PROXY  # ... and the run's proxy, unless the server's own settings say otherwise
    if network == "all":
        share = True
    elif network == "none":
        share, proxy = False, None
    elif isinstance(network, dict):
        share, proxy = False, box.own_proxy(config.name, _server_net(rec, env, config.name, rules))

    def wrap(argv: list[str], environ: dict[str, str]) -> tuple[list[str], dict[str, str]]:
        return box.wrap(argv, environ, layout=layout, share_net=share, proxy=proxy)

    return wrap


def env_path(config: ServerConfig, environ: dict[str, str]) -> str:
    return config.env.get("PATH") or environ.get("PATH", "")


def command_prefixes(command: str, path: str, home: str, workspace: Path, cwd: str | None = None) -> list[Path]:
    """The install a server's command belongs to (a venv, a node install, and what its interpreter links to),
    read-only: configuring a server is saying it may run. The sandbox's own rule decides how much that is
    (runner/sandbox/layout.py toolchain_root: never $HOME, ~/.local or ~/.config whole, never a directory
    holding the workspace). A command in the workspace adds nothing: the workspace shows it, and where its
    symlinks lead is the workspace's choice, not the configuration's."""
    if not command:
        return []
    if "/" in command and not os.path.isabs(command) and cwd:
        command = os.path.join(cwd, command)  # as the server's own cwd would find it
    found = shutil.which(command, path=path)
    if found is None:
        return []
    forms = list(dict.fromkeys([os.path.normpath(workspace), os.path.realpath(workspace)]))
    out: list[Path] = []
    for exe in _link_ends(os.path.abspath(found), forms):
        roots = [toolchain_root(os.path.dirname(exe), os.path.normpath(home), w) for w in forms]
        root = "" if "" in roots else max(roots, key=len)  # the narrowest any form of the workspace allows
        if root and not any(root == d or root.startswith(d + "/") for d in ("/usr", "/bin", "/sbin")) \
                and Path(root) not in out:
            out.append(Path(root))
    return out


def _link_ends(exe: str, workspace: list[str]) -> list[str]:
    """`exe` and where its symlinks finally lead, leaving out any in the workspace, and stopping at a link that
    lives in the workspace (its target is untrusted content's choice)."""

    def inside(p: str) -> bool:
        real_dir = os.path.realpath(os.path.dirname(p))
        return any(_under(p, w) or _under(real_dir, w) for w in workspace)

    if inside(exe):
        return []
    cur = exe
    for _ in range(40):  # the kernel's own ELOOP limit
        if not os.path.islink(cur):
            break
        nxt = os.path.normpath(os.path.join(os.path.realpath(os.path.dirname(cur)), os.readlink(cur)))
        if inside(nxt):
            break
        cur = nxt
    return list(dict.fromkeys([exe, cur]))


def _under(path: str, base: str) -> bool:
    return path == base or path.startswith(base.rstrip("/") + "/")


def _server_net(rec: Recording, env: CallEnv, name: str, rules: list[Any]) -> Any:
    """A server's own allow-list (trusted config), as rules after the run's `network` ones: decided and recorded
    as the run's own sandbox does it (runner/sandbox/session.py `_net_decider`): a permission_decision, a
    network_request, and a denial in the summary."""
    from runner.engine.call import decide_and_record

    own = dataclasses.replace(env, policy=env.policy.with_rules(rules))
    call_id, tool = f"mcp-{name}", f"mcp__{name}"

    def verdict(host: str, port: int) -> Verdict:
        target = Target("network", net_target(host, port))
        decision, _denial = decide_and_record(own, call_id, tool, "network", [target], rec.emit)
        rule = decision.deciding.rule
        rec.emit(NetworkRequest(call_id=call_id, host=host, port=port, decision=decision.effective,
                                rule=rule.describe() if rule else None))
        return net_verdict(decision)

    return verdict
