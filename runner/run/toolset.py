"""`--tools LIST`: the tools a run offers the model, picked by name.

A small model's first prompt is mostly tool definitions; offering only the tools a job needs shortens it.
Offering is not allowing: the policy still decides every call, and a call to a tool that is not offered
is an `UnknownTool` result like any other name the run does not serve. Built-in names are checked before
a run directory exists; `mcp__SERVER__TOOL` names only once the servers have listed their tools. The
tools keep the registry's order whatever order LIST names them in: the tools array is part of the
byte-stable prompt prefix. A continued run sends its recorded tools.json, so resume and fork refuse it.
"""

from __future__ import annotations

import difflib
import sys
from typing import Any

from runner.core.events import RunWarning
from runner.core.outcome import UsageError
from runner.engine.recorder import Recording
from runner.subagents.builtin import BUILTIN
from runner.tools.registry import Registry

MCP_PREFIX = "mcp__"
SOURCE = "--tools (or AGENT_RUN_TOOLS)"
# The order `--tools` lists the built-in names in: what every run offers, what the trusted environment configures,
# what a run adds when it has what they need (the classes' `offered`).
OFFERED = ("always", "configured", "added")


def builtin_names() -> list[str]:
    return [cls.name for cls in sorted(BUILTIN, key=lambda cls: OFFERED.index(cls.offered))]


def tools_problem(spec: str | None) -> str | None:
    """Why LIST cannot be used (for the check before a run directory exists), or None."""
    try:
        parse_tools(spec)
    except UsageError as exc:
        return exc.reason
    return None


def parse_tools(spec: str | None) -> tuple[str, ...] | None:
    """The names in LIST (None: every tool the run has). An unknown built-in name, or a list naming
    nothing, is a usage error."""
    if spec is None:
        return None
    names = tuple(dict.fromkeys(n.strip() for n in spec.split(",") if n.strip()))
    if not names:
        raise UsageError(f"{SOURCE} names no tool (give a comma-separated list, e.g. read,edit,bash)")
    known = builtin_names()
    for name in names:
        if name.startswith(MCP_PREFIX) or name in known:
            continue
        close = difflib.get_close_matches(name, known, n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise UsageError(f"{SOURCE}: unknown tool {name!r}{hint}; built-in tools: {', '.join(known)}; "
                         f"an MCP server's tools are named {MCP_PREFIX}SERVER__TOOL")
    return names


def offered_names(spec: str | None, recorded: list[dict[str, Any]] | None) -> tuple[str, ...] | None:
    """The names a run offers: a continued run's recorded tools array (sealed), else LIST's."""
    if recorded is not None:
        return tuple(t["function"]["name"] for t in recorded)
    return parse_tools(spec)


def offers(names: tuple[str, ...] | None, tool: str) -> bool:
    """Whether the run offers `tool` (so `skill` and `task`, and what they set up, are left out when not)."""
    return names is None or tool in names


def pick(rec: Recording, registry: Registry, names: tuple[str, ...] | None, sealed: bool = False) -> Registry:
    """The registry cut down to `names`, in its own order, so a call to a tool not offered is an UnknownTool.
    An `mcp__` name no started server serves is a usage error (exit 2, with the run recorded); a built-in the
    run cannot offer here (`skill` without skills, `task` with subagents off or denied) is a warning. `sealed`:
    a continued run's recorded names (what is not served then is check_served's to say)."""
    if names is None:
        return registry
    if sealed:
        return Registry([t for t in registry.tools if t.name in names])
    have = set(registry.names)
    missing_mcp = [n for n in names if n.startswith(MCP_PREFIX) and n not in have]
    if missing_mcp:
        served = [n for n in registry.names if n.startswith(MCP_PREFIX)]
        raise UsageError(f"{SOURCE}: no MCP server offers {', '.join(missing_mcp)}; the MCP tools of this run: "
                         f"{', '.join(served) or 'none'}")
    absent = [n for n in names if n not in have]
    if absent:
        message = (f"{SOURCE} names {', '.join(absent)}, which this run cannot offer (no skills, subagents off, or "
                   "no AGENT_RUN_SEARCH_URL)")
        print(f"agent-run: warning: {message}", file=sys.stderr)
        rec.emit(RunWarning(code="tools_not_offered", message=message))
    return Registry([t for t in registry.tools if t.name in names])
