"""`run_started.inputs`: what a continuation of the run must restore, each file with its sha256, in the
hash-chained log (a run killed before its summary has only that): the `--mcp-config` files and the subagent
profiles offered. Instructions, the output schema and skills are in `run_started.instructions`.
runner/sessions/inputs.py checks them when a run is resumed, forked or replayed. Pure but for hashing files.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from runner.core.jsonutil import file_sha256
from runner.record.rundir import portable
from runner.tools.registry import Registry


def run_inputs(mcp_configs: list[str], registry: Registry, home: Path, workspace: Path) -> dict[str, Any]:
    """The --mcp-config files given (relative to the workspace root `home`, as printed commands name them) and
    the profiles the `task` tool offers (built-in `general`: path and sha256 null)."""
    configs = [{"path": portable(Path(p).expanduser(), home), "sha256": file_sha256(Path(p).expanduser())}
               for p in mcp_configs]
    task = registry.get("task")
    profiles = getattr(task, "profiles", None) or {}
    agents = [{"name": p.name, "path": portable(p.path, workspace) if p.path else None,
               "sha256": file_sha256(p.path) if p.path else None, "trusted": p.trusted}
              for p in profiles.values()]
    return {"mcp_configs": configs, "agents": agents}


def summary_copies(inputs: dict[str, Any]) -> dict[str, Any]:
    """summary.json's `mcp_configs` / `mcp_config_sha256`: copies of run_started's, for readers of the summary."""
    configs = inputs["mcp_configs"]
    if not configs:
        return {}
    return {"mcp_configs": [c["path"] for c in configs], "mcp_config_sha256": [c["sha256"] for c in configs]}
