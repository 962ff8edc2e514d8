"""The risk of a tool call: `low`, `medium` or `high`, from its tool and its targets, as the
policy's `risk` section may override it.

- By tool (its class's `risk`, runner/tools/): `low` for what only reads (read, grep, glob, list, memory_search,
  todo, skill); `medium` for what acts in the workspace (bash, write/edit/move, MCP tools); `high` for `delete`,
  the network (`web_fetch`, `web_search`, a command's connection) and a `task` child that can run commands. This
  floor is below the tools: the call site hands the tool's level to the decision (`base_risk`).
- By target: anything outside the workspace (an `fs:` target) or on the network is `high`, whatever the tool, and so
  is a command whose effect is (runner/policy/commands.py: it deletes, discards or rewrites history, pushes, is a
  network client, or runs a script piped into a shell).
- By the policy: `risk.rules` (`{domain, pattern, level}`, the last matching rule wins, as for permissions)
  set a target's level; the call's risk is its riskiest target's.
- `risk.askAtOrAbove`: a target the policy's own rules allow becomes `ask` at that level or above (an
  `--approve` or `replay` approval still allows it: that is the approval).

Pure functions over the policy; the decision (runner/policy/decide.py) records each target's level.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from runner.policy.domains import TABLE
from runner.policy.match import Pattern, compile_pattern
from runner.policy.model import Policy, Target

LEVELS = ("low", "medium", "high")
RANK = {level: i for i, level in enumerate(LEVELS)}

# A call's level before its targets is its tool's (`Tool.risk`, handed to decide() by the call site); what is decided
# without a tool (a connection a running tool meets, a `task` profile decided ahead, `policy explain`) is its domain's.
_BY_DOMAIN = {d.name: d.risk for d in TABLE}
_NETWORK_DOMAINS = frozenset(d.name for d in TABLE if d.network)


def domain_risk(domain: str) -> str:
    """A domain's own level, before its targets: an unknown domain is `high` (nothing is assumed safe)."""
    return _BY_DOMAIN.get(domain, "high")


def riskier(a: str, b: str) -> str:
    return a if RANK[a] >= RANK[b] else b


def target_risk(policy: Policy, base: str, target: Target) -> str:
    """One target's level: the last matching `risk.rules` entry, else the tool's level, raised to `high` outside
    the workspace, on the network and for a command whose effect is high."""
    for domain, pattern, level in reversed(_rules(policy)):
        if domain in ("*", target.domain) and pattern.matches(target.target):
            return level
    if target.target.startswith("fs:") or target.domain in _NETWORK_DOMAINS or target.effect:
        return "high"
    return base


def ask_at_or_above(policy: Policy) -> str | None:
    section = policy.sections.get("risk")
    level = section.get("askAtOrAbove") if isinstance(section, dict) else None
    return level if level in RANK else None


def needs_asking(policy: Policy, level: str) -> bool:
    threshold = ask_at_or_above(policy)
    return threshold is not None and RANK[level] >= RANK[threshold]


def _rules(policy: Policy) -> list[tuple[str, Pattern, str]]:
    section = policy.sections.get("risk")
    rules = section.get("rules") if isinstance(section, dict) else None
    if not rules:
        return []
    # Looked up per target (grep decides every file it searches): the list's identity first, its text only once.
    last = _LAST.get(id(rules))
    if last is not None and last[0] is rules:
        return last[1]
    compiled = _compiled(json.dumps(rules, sort_keys=True))
    _LAST[id(rules)] = (rules, compiled)
    return compiled


_LAST: dict[int, tuple[Any, list[tuple[str, Pattern, str]]]] = {}  # a policy's rule list -> compiled (kept alive)


@cache
def _compiled(rules_json: str) -> list[tuple[str, Pattern, str]]:
    """Compiled once per distinct rule list (a policy's, a narrowing policy's). Patterns were checked when the
    policy was loaded (runner/policy/load.py); a recorded policy is read back without refusing any."""
    rules: list[dict[str, Any]] = json.loads(rules_json)
    return [(str(r["domain"]), compile_pattern(str(r["pattern"])), str(r["level"])) for r in rules
            if isinstance(r, dict) and r.get("level") in RANK and isinstance(r.get("pattern"), str)]
