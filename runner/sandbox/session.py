"""A run's sandbox, from its policy and the trusted command line: opened once, closed at the end.

The egress proxy decides each connection through the same hook as a tool call
(`decide_and_record`): a `permission_decision` under the call whose command connected,
a `network_request` event, and a denial in the summary (exit 3) when refused.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from runner.core.events import NetworkRequest
from runner.core.outcome import UsageError
from runner.policy.egress import Verdict
from runner.policy.sandbox_config import SandboxConfigError, config_from, resolve_mode
from runner.sandbox.layout import policy_paths
from runner.sandbox.paths import extra_paths
from runner.sandbox.proxy import Decide
from runner.sandbox.runtime import Sandbox, SandboxUnavailable, open_sandbox

if TYPE_CHECKING:
    from runner.engine.call import CallEnv
    from runner.engine.recorder import Recording


def start_sandbox(rec: Recording, env: CallEnv, flag: str | None, environ: dict[str, str] | None = None) -> Sandbox:
    """`environ`: the trusted environment (the process's, over `--env-file` files). The layout is built from it,
    not from os.environ: a toolchain or a credential file only an --env-file names (CARGO_HOME, NETRC) is shown
    or hidden as the job's own would be, and the MCP servers that get that environment see the same sandbox."""
    environ = dict(os.environ) if environ is None else environ
    section = env.policy.sections.get("sandbox", {})
    try:
        config = config_from(section, resolve_mode(flag, environ, section))
    except SandboxConfigError as exc:
        raise UsageError(str(exc)) from None
    workspace = rec.workspace
    try:
        own_ro, own_rw = (extra_paths(config.read_only, workspace, "sandbox.readOnly"),
                          extra_paths(config.writable, workspace, "sandbox.writable"))
    except SandboxConfigError as exc:
        raise UsageError(str(exc)) from None
    readable = [*policy_paths(env.policy.rules, "read", workspace), *own_ro]
    if not rec.run_dir.is_relative_to(workspace):
        readable.append(rec.run_dir)  # the agent may read its own spill files from a command too
    writable = [*policy_paths(env.policy.rules, "edit", workspace), *own_rw]
    try:
        box = open_sandbox(config, workspace=workspace, protected=list(rec.ctx.protected), readable=readable,
                           writable=writable, environ=environ, decide_net=_net_decider(rec, env))
    except SandboxUnavailable as exc:
        raise UsageError(f"{exc} (use --sandbox auto to run without it; see `agent-run sandbox check`)") from None
    rec.lifecycle.on_close(box.close)
    rec.lifecycle.section("sandbox", box.describe())
    if not box.active and config.mode == "auto" and rec.ctx.run_dir is not None:
        print(f"agent-run: WARNING: running WITHOUT a sandbox ({box.reason}): commands run with the runner's own "
              "access to files and network. Install bubblewrap or see `agent-run sandbox check`.", file=sys.stderr)
    return box


def _net_decider(rec: Recording, env: CallEnv) -> Decide:
    """For a connection whose Proxy-Authorization names no command the runner is running (a client that ignores
    the proxy URL's credentials, or a process left over): the one command running when there is one, as before
    agents could run at once; with none, the run's own agent. With several, the connection could be any agent's,
    under a narrower policy than the run's: refused, recorded under the run."""
    from runner.engine.call import net_decider

    own = net_decider(env, rec.emit, "sandbox", "bash")

    def decide(host: str, port: int) -> Verdict:
        box = rec.ctx.sandbox
        proxy = box.proxy if isinstance(box, Sandbox) else None  # set once the sandbox is open
        running = list(proxy.callers.values()) if proxy is not None else []
        if len(running) == 1:
            return running[0](host, port)
        if not running:
            return own(host, port)
        rec.emit(NetworkRequest(call_id="sandbox", host=host, port=port, decision="deny", rule=None))
        return Verdict(False, False, reason="several agents' commands are running and the connection names none "
                                            "of them (its client ignored the proxy URL's credentials)")

    return decide
