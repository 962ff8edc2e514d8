"""Decide a tool call: every (domain, target) pair is decided; the strictest wins."""

from __future__ import annotations

from dataclasses import dataclass

from runner.policy.model import STRICTNESS, Decision, Policy, Rule


@dataclass(frozen=True)
class TargetDecision:
    target: str
    decision: Decision
    rule: Rule | None  # None: nothing matched, so the default `ask`


@dataclass(frozen=True)
class CallDecision:
    domain: str
    decision: Decision  # as the policy says
    effective: str  # what this run does: allow, deny, or auto_approved (full_access)
    targets: tuple[TargetDecision, ...]

    @property
    def deciding(self) -> TargetDecision:
        """The target that made the call's decision (the first strictest)."""
        return next(t for t in self.targets if t.decision == self.decision)

    @property
    def allowed(self) -> bool:
        return self.effective in ("allow", "auto_approved")


def decide_target(policy: Policy, domain: str, target: str) -> TargetDecision:
    """The last matching rule decides; nothing matching means ask."""
    for rule in reversed(policy.rules):
        if rule.domain in ("*", domain) and rule.pattern.matches(target):
            return TargetDecision(target, rule.decision, rule)
    return TargetDecision(target, "ask", None)


def decide(policy: Policy, domain: str, targets: list[str]) -> CallDecision:
    decided = tuple(decide_target(policy, domain, t) for t in targets)
    decision: Decision = max((t.decision for t in decided), key=STRICTNESS.__getitem__, default="ask")
    if decision == "allow":
        effective = "allow"
    elif decision == "ask" and policy.mode == "full_access":
        effective = "auto_approved"
    else:
        # Headless: nobody can answer an `ask`, so it is a deny with a replay command.
        effective = "deny"
    return CallDecision(domain, decision, effective, decided)
