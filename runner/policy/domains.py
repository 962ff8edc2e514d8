"""The policy's domains: what a target is decided in (`read`, `edit`, `bash`, …), each with what the risk of a call
decided there is when no tool says more, and whether its targets are on the network.

This table is the one list of them: the policy loader and `policy explain` read it, and the enums of
policies/policy.schema.json and runner/schemas/events.schema.json are generated from it (`python -m
runner.cli.docgen`; a test fails when a committed schema differs). A domain's target syntax is
runner/policy/targets.py's.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Domain:
    name: str
    # A call's level decided here with no tool to say (a connection a running tool meets, a `task` profile decided
    # ahead, `policy explain`): runner/policy/risk.py.
    risk: str
    network: bool = False  # its targets are on the network: `high` whatever the tool


TABLE: tuple[Domain, ...] = (
    Domain("read", "low"),
    Domain("edit", "medium"),
    Domain("bash", "medium"),
    Domain("web_fetch", "high", network=True),
    Domain("web_search", "high", network=True),
    Domain("mcp", "medium"),
    Domain("task", "high"),
    Domain("network", "high", network=True),
)
DOMAINS: tuple[str, ...] = tuple(d.name for d in TABLE)
