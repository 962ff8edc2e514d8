"""`policy explain --agent NAME`: what a child started with profile NAME gets — its tools (and why each other one is
not offered), its paths scope — and whether that scope refuses the call explained (runner/subagents/scope.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from runner.policy.model import Policy
from runner.policy.targets import targets_for
from runner.record.rundir import portable
from runner.subagents.builtin import ALIASES, BUILTIN
from runner.subagents.profiles import discover, trusted_dirs
from runner.subagents.scope import PathScope, offered


class NoProfile(LookupError):
    pass


def explain_agent(policy: Policy, workspace: Path, name: str, dirs: list[str], sandboxed: bool,
                  call: tuple[str, str] | None = None) -> dict[str, Any]:
    """The `agent` part of explain's answer for profile `name` (found as a run finds it: `dirs` are `--agents`),
    as a child of the run's own agent (the built-in tools; `task` only below the depth limit, so not here);
    `sandboxed`: whether a run here would have an active sandbox. `call` (domain, input): `refused` says why the
    scope refuses it, if it does. Raises NoProfile."""
    found = discover(workspace, trusted_dirs(dirs, policy.path, policy.sections.get("subagents", {})),
                     aliases=ALIASES).profiles
    profile = found.get(name)
    if profile is None:
        raise NoProfile(f"no profile {name!r} (profiles: {', '.join(found)})")
    tools = [t for t in BUILTIN if t.name != "task"]
    kept, dropped = offered([t.name for t in tools], {t.name: t.domain for t in tools},
                            None if profile.tools is None else [n for n, _ in profile.tools], profile.disallowed,
                            profile.scope, sandboxed)
    out: dict[str, Any] = {"name": profile.name,
                           "profile": portable(profile.path, workspace) if profile.path else "builtin",
                           "trusted": profile.trusted, "tools": kept, "not_offered": dropped,
                           "paths": profile.scope.describe() if profile.scope is not None else None,
                           "refused": None}
    if call is not None and profile.scope is not None:
        domain, value = call
        out["refused"] = PathScope(profile.name, profile.scope).refuses(domain, targets_for(domain, value, workspace))
    return out


def agent_text(agent: dict[str, Any]) -> list[str]:
    """The `agent` part (with `decision`: the call's for this agent) for a terminal."""
    paths = agent["paths"] or {}
    lines = [f"agent {agent['name']} ({agent['profile']}, {'trusted' if agent['trusted'] else 'repository'}):",
             f"  tools: {', '.join(agent['tools']) or 'none'}"]
    lines += [f"  not offered: {tool} ({why})" for tool, why in agent["not_offered"].items()]
    lines += [f"  paths.{key}: {', '.join(value)}" for key, value in paths.items()]
    lines.append(f"  decision for this agent: {agent['decision']}"
                 + (f" (refused by its scope: {agent['refused']})" if agent["refused"] else ""))
    return lines
