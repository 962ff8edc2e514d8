"""What a continuation restores from `run_started.inputs` (runner/run/inputs.py), each file checked by its
sha256 — a killed run has no summary.json, and the log is what was recorded when the run started.

- The `--mcp-config` files (unless `--mcp-config` is given now): re-read where the run recorded them; a file
  gone or changed is refused (exit 2, naming it): it names commands started with the job's secrets in their
  environment, and the recorded tools array still offers its servers' tools.
- After the new run is prepared, every tool of the recorded tools array must be served (`unserved`): an MCP
  server that failed to start, a skill or a subagent profile no longer there would otherwise answer the
  model's call with UnknownTool and the run would end as if nothing were missing. So: exit 2, before the
  first request. The same for the subagent profiles the run offered: each is offered again, with the same
  sha256 and trust, or the continuation is refused.
- Skills (`restored_skills`) and the output schema (runner/workspace/output_schema.py `recorded`) are checked
  by the hashes in `run_started.instructions`; the instructions themselves are not re-read: the recorded
  system prompt is sent as it was.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from runner.core.jsonutil import file_sha256, sha256_text
from runner.core.outcome import UsageError
from runner.mcp.setup import recorded_mcp_configs
from runner.record.integrity import AUDIT_KEY_ENV
from runner.sessions.load import Recorded
from runner.sessions.vouch import vouched
from runner.subagents.builtin import ALIASES
from runner.subagents.profiles import recorded_dirs
from runner.tools.registry import Registry
from runner.workspace.skills import discover, index


def _inputs(started: dict[str, Any]) -> dict[str, Any] | None:
    inputs = started.get("inputs")
    return inputs if isinstance(inputs, dict) else None


def restored_mcp_configs(run: Recorded, home: Path) -> list[str]:
    """The --mcp-config files the run was given, checked: UsageError naming a file that is gone or changed.
    A log from before run_started.inputs: the summary's copy, as before (a changed file is skipped, warned).

    The paths and hashes come from the log, which — unkeyed, and with no summary to seal it — whoever can
    write the run directory can rewrite. A config names commands started with the job's secrets, so for a
    killed run one inside the workspace (where that writer may also have put the file) is restored only from
    a log a key given now vouches for; otherwise the person names it again with --mcp-config. A sealed run is
    taken as the policy snapshot is (runner/sessions/vouch.py): the same known gap, docs/threat-model.md."""
    inputs = _inputs(run.started)
    if inputs is None:
        return recorded_mcp_configs(run.summary, home)
    out = []
    for entry in inputs.get("mcp_configs") or []:
        name = str(entry.get("path"))
        path = Path(name).expanduser()
        path = path if path.is_absolute() else home / path
        if not (run.sealed or vouched(run)) and path.resolve().is_relative_to(home.resolve()):
            raise UsageError(f"the run was given --mcp-config {name}, a file in the workspace, and its log is not "
                             f"keyed ({AUDIT_KEY_ENV}): the log alone does not start commands named there; pass "
                             f"--mcp-config {name} to use it")
        try:
            sha = file_sha256(path) or ""
        except OSError as exc:
            raise UsageError(f"the run was given --mcp-config {name}, which cannot be read now "
                             f"({exc.strerror or exc}): restore it, or pass --mcp-config") from None
        if sha != entry.get("sha256"):
            raise UsageError(f"the run was given --mcp-config {name}, which changed since (sha256 {sha[:12]}…, "
                             f"recorded {str(entry.get('sha256'))[:12]}…): its servers are not started again "
                             "unchecked; restore it, or pass --mcp-config to use it as it is")
        out.append(str(path))
    return out


def recorded_profile_dirs(started: dict[str, Any], summary: dict[str, Any] | None, home: Path) -> list[str]:
    """The directories of the trusted profiles the run offered that are inside the workspace, read again as
    repository content (a log cannot grant trust: a profile trusted in the run comes back trusted only from
    --agents or the policy, which `unserved` checks). A log from before run_started.inputs: the summary's."""
    inputs = _inputs(started)
    if inputs is None:
        return recorded_dirs(summary, home)
    root = home.resolve()
    dirs = {(home / a["path"]).parent.resolve() for a in inputs.get("agents") or []
            if a.get("trusted") and isinstance(a.get("path"), str) and not Path(a["path"]).is_absolute()}
    return sorted(str(d) for d in dirs if d.is_dir() and d.is_relative_to(root))


def unserved(tools: list[dict[str, Any]] | None, registry: Registry, started: dict[str, Any],
             mcp: dict[str, Any]) -> list[str]:
    """What of the recorded run the continuation cannot serve, each said as a person would fix it: recorded
    tools no tool serves now (`mcp`: summary.json's `mcp` report, why a server is down), and profiles not
    offered again as they were."""
    missing = []
    for spec in tools or []:
        name = str((spec.get("function") or {}).get("name"))
        if registry.get(name) is not None:
            continue
        why = ""
        if name.startswith("mcp__"):
            server = name.split("__")[1]
            report = mcp.get(server) or {}
            why = (f" (MCP server '{server}' did not start: {report.get('error')})" if report.get("status") == "failed"
                   else f" (MCP server '{server}' is not configured now)" if not report else "")
        missing.append(f"tool {name}{why}")
    task = registry.get("task")
    offered = getattr(task, "profiles", None) or {}
    for agent in (_inputs(started) or {}).get("agents") or []:
        now = offered.get(agent.get("name"))
        shown = f"subagent profile {agent.get('name')!r} ({agent.get('path') or 'built in'})"
        if now is None:
            missing.append(f"{shown}: not offered now")
        elif (file_sha256(now.path) if now.path else None) != agent.get("sha256"):
            missing.append(f"{shown}: changed since the run")
        elif now.trusted != agent.get("trusted"):
            missing.append(f"{shown}: trusted in the run, repository content now (pass --agents again)"
                           if agent.get("trusted") else f"{shown}: repository content in the run, trusted now")
    return missing


def check_served(tools: list[dict[str, Any]] | None, registry: Registry, started: dict[str, Any],
                 mcp: dict[str, Any], verb: str) -> None:
    """UsageError (exit 2, before the first request) when anything the run had is not served now."""
    missing = unserved(tools, registry, started, mcp)
    if missing:
        raise UsageError(f"cannot {verb}: the run had what is not here now: " + "; ".join(missing)
                         + " — restore it (or start a new run)")


def restored_skills(tools: list[dict[str, Any]] | None, started: dict[str, Any], workspace: Path,
                    dirs: list[str]) -> list[Any] | None:
    """The skills that serve the recorded `skill` tool (None: the run had none): found now (`--skills` given
    now, the workspace's), checked like the output schema — their index, as the recorded system prompt holds
    it, must hash to what run_started.instructions recorded (source `skills`); else UsageError."""
    if not any((t.get("function") or {}).get("name") == "skill" for t in tools or []):
        return None
    skills = discover(workspace, dirs, ALIASES)[0]
    entry = next((i for i in started.get("instructions") or [] if i.get("source") == "skills"), None)
    if entry is not None and (not skills or sha256_text(index(skills)) != entry.get("sha256")):
        raise UsageError("the skills the run had are not here unchanged (their index differs from the one in the "
                         "recorded prompt): restore them, pass the run's --skills again, or start a new run")
    return skills
