"""MCP servers for a run: which ones (checked before anything starts), started inside its sandbox, and
started again by a replay or resume only when the config is the one recorded. The wiring between
runner/mcp/ (which knows nothing of runs) and a run; the MCP SDK is imported only when a server is set.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from runner.core.jsonutil import file_sha256
from runner.engine.call import CallEnv
from runner.engine.recorder import Recording
from runner.engine.settings import Settings
from runner.policy.model import Policy
from runner.tools.base import Tool


def mcp_servers(rec: Recording, policy: Policy, given: list[str], environ: dict[str, str]) -> dict[str, Any]:
    """The configured MCP servers (checked: a bad config is exit 2 before anything starts)."""
    if not (given or policy.sections.get("mcpServers") or environ.get("AGENT_RUN_MCP_CONFIG")):
        return {}
    from runner.mcp.runtime import configured  # the MCP SDK only for runs that use it

    # Read first, as trusted inputs; the files given are then recorded with their sha256 in run_started.inputs
    # (runner/run/inputs.py): a replay or resume given no --mcp-config starts them again only if unchanged
    # (runner/sessions/inputs.py).
    return configured(policy.sections.get("mcpServers"), policy.path, given, environ)


def start_mcp(rec: Recording, env: CallEnv, servers: dict[str, Any], environ: dict[str, str],
              settings: Settings) -> list[Tool]:
    """Started inside the run's sandbox (call_env made it), before the first request, their connections decided
    under `env`'s policy: their tools, which go after the core ones."""
    if not servers:
        return []
    from runner.mcp.runtime import start_all

    runtime = start_all(rec, env, servers, environ, settings.mcp_start_timeout_s)
    runtime.call_timeout_s = settings.mcp_call_timeout_s
    return list(runtime.tools())


def recorded_mcp_configs(summary: dict[str, Any] | None, home: Path) -> list[str]:
    """The --mcp-config files a run recorded before run_started.inputs (summary.json only), for a replay or
    resume given none: as recorded (relative to the workspace), where they still exist unchanged. A file that
    changed since is not started (it could name any command, with the job's secrets in its environment): a
    warning says to pass it again."""
    names = (summary or {}).get("mcp_configs") or []
    shas = (summary or {}).get("mcp_config_sha256") or [None] * len(names)
    out = []
    for name, sha in zip(names, shas, strict=False):
        path = home / name
        if not path.is_file():
            continue
        if sha is None or _sha_or_none(path) != sha:
            print(f"agent-run: warning: {name} changed since the run (or its hash was not recorded): its MCP servers "
                  "are not started; pass --mcp-config to use it", file=sys.stderr)
            continue
        out.append(str(path))
    return out


def _sha_or_none(path: Path) -> str | None:
    try:
        return file_sha256(path)
    except OSError:
        return None
