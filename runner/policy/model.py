"""The resolved policy: rules in evaluation order plus the limit sections."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from runner.policy.match import Pattern

Decision = Literal["allow", "deny", "ask"]
STRICTNESS: dict[str, int] = {"allow": 0, "ask": 1, "deny": 2}
# The source of the read allows a run adds for itself: its own outputs, the runs it continues, the workflow's
# --skills directories (runner/run/assemble.py). They are the workflow's, not the policy's: never asked for their risk.
OWN_OUTPUTS = "<run outputs>"


@dataclass(frozen=True)
class Target:
    """One thing a call touches, as the policy sees it."""

    domain: str
    target: str
    floor: Decision = "allow"  # "ask" when part of the input could not be understood
    note: str | None = None  # why the floor was raised
    effect: str | None = None  # what makes it high risk whatever the tool (a command that deletes: risk.py)


@dataclass(frozen=True)
class Rule:
    domain: str  # one of DOMAINS (runner/policy/domains.py), or "*"
    pattern: Pattern
    decision: Decision
    source: str  # the file it came from, or "--approve"
    index: int  # its index in that file's rules
    line: int = 0
    scope: str = "run"  # an approval's: `run` (--approve, for the whole run), `call` (replay --call)

    def describe(self) -> dict[str, Any]:
        return {"file": self.source, "index": self.index, "line": self.line,
                "domain": self.domain, "pattern": self.pattern.raw, "decision": self.decision}


@dataclass
class Policy:
    path: str  # the file named on the command line (resolved)
    mode: str
    rules: list[Rule]
    files: list[str]  # every file in the extends chain, base first
    sections: dict[str, Any] = field(default_factory=dict)  # budget, truncation, ... merged
    resolved: dict[str, Any] = field(default_factory=dict)  # the snapshot written to the run dir
    # Policies that must also allow a target (an untrusted task's own policy): decisions are intersected.
    narrowed_by: tuple[Policy, ...] = ()
    # Whether a file of the extends chain (or --mode) set the mode: a user config's mode applies only when not.
    mode_given: bool = True
    # The rules' lookup index (runner/policy/index.py), built by the first decision: not part of the policy.
    index: Any = field(default=None, init=False, repr=False, compare=False)

    def with_rules(self, extra: list[Rule], *, first: bool = False) -> Policy:
        """`extra` after the rules (they win: the last match decides), or before them when `first`."""
        rules = [*extra, *self.rules] if first else [*self.rules, *extra]
        resolved = snapshot(self.mode, self.sections, rules, self.files)
        if self.narrowed_by:
            resolved["narrowed_by"] = [p.resolved for p in self.narrowed_by]
        return Policy(self.path, self.mode, rules, self.files, self.sections, resolved, self.narrowed_by,
                      self.mode_given)

    def with_mode(self, mode: str) -> Policy:
        return Policy(self.path, mode, self.rules, self.files, self.sections, {**self.resolved, "mode": mode},
                      self.narrowed_by)

    def narrowed(self, other: Policy) -> Policy:
        """This policy, where `other` must also allow: never more than either allows. The mode, the
        sections (budgets, sandbox, …) and the hard limits stay this policy's."""
        chain = (*self.narrowed_by, other)
        return Policy(self.path, self.mode, self.rules, self.files, self.sections,
                      {**self.resolved, "narrowed_by": [p.resolved for p in chain]}, chain, self.mode_given)


def snapshot(mode: str, sections: dict[str, Any], rules: list[Rule], files: list[str]) -> dict[str, Any]:
    """The resolved policy as one JSON document: what the run actually used."""
    permission = {**sections.get("permission", {}),
                  "rules": [{"domain": r.domain, "pattern": r.pattern.raw, "decision": r.decision,
                             "source": r.source, "index": r.index} for r in rules]}
    return {"mode": mode, **sections, "permission": permission, "files": files}
