"""Decide a tool call: every target is decided; the strictest wins (deny > ask > allow). Each target also gets
its risk (runner/policy/risk.py), and a target the policy allows at or above `risk.askAtOrAbove` is asked."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from runner.policy.index import RuleIndex
from runner.policy.model import OWN_OUTPUTS, STRICTNESS, Decision, Policy, Rule, Target
from runner.policy.risk import domain_risk, needs_asking, riskier, target_risk

APPROVED = "--approve"  # the source of an approval's rule (runner/policy/load.py parse_approval)


@dataclass(frozen=True)
class TargetDecision:
    target: Target
    decision: Decision
    rule: Rule | None  # None: nothing matched (the default `ask`), or only the floor applied
    risk: str | None = None  # low | medium | high (runner/policy/risk.py)

    def describe(self) -> dict[str, Any]:
        out = {"domain": self.target.domain, "target": self.target.target, "decision": self.decision,
               "rule": self.rule.describe() if self.rule else None}
        if self.target.note:
            out["note"] = self.target.note
        if self.risk is not None:
            out["risk"] = self.risk
        return out


@dataclass(frozen=True)
class CallDecision:
    domain: str  # the tool's domain
    decision: Decision  # as the policy says
    effective: str  # what this run does: allow, deny, or auto_approved (full_access)
    mode: str
    targets: tuple[TargetDecision, ...]

    @property
    def deciding(self) -> TargetDecision:
        """The target that made the call's decision (the first strictest)."""
        return next(t for t in self.targets if t.decision == self.decision)

    @property
    def risk(self) -> str:
        """The call's risk: its riskiest target's."""
        level = "low"
        for t in self.targets:
            level = riskier(level, t.risk or "low")
        return level

    @property
    def allowed(self) -> bool:
        return self.effective in ("allow", "auto_approved")


def strictest(decisions: list[Decision]) -> Decision:
    return max(decisions, key=STRICTNESS.__getitem__, default="ask")


def decide_target(policy: Policy, target: Target) -> TargetDecision:
    """The last matching rule decides; nothing matching means ask; a floor can only tighten; a
    narrowing policy (an untrusted task's) can only tighten too. The rules are looked up in the
    policy's index (runner/policy/index.py): the same rule `decide_target_linear` finds, sooner."""
    rule = rule_index(policy).last_match(target.domain, target.target)
    found = TargetDecision(target, rule.decision, rule) if rule else TargetDecision(target, "ask", None)
    return _tightened(policy, target, found, decide_target)


def decide_target_linear(policy: Policy, target: Target) -> TargetDecision:
    """The reference: every rule tried from the last; what the fast path must always agree with."""
    found = TargetDecision(target, "ask", None)
    for rule in reversed(policy.rules):
        if rule.domain in ("*", target.domain) and rule.pattern.matches(target.target):
            found = TargetDecision(target, rule.decision, rule)
            break
    return _tightened(policy, target, found, decide_target_linear)


def _tightened(policy: Policy, target: Target, found: TargetDecision,
               decide_other: Callable[[Policy, Target], TargetDecision]) -> TargetDecision:
    for other in policy.narrowed_by:
        also = decide_other(other, target)
        if STRICTNESS[also.decision] > STRICTNESS[found.decision]:
            found = also
    if STRICTNESS[target.floor] > STRICTNESS[found.decision]:
        return TargetDecision(target, target.floor, None)
    return found


def rule_index(policy: Policy) -> RuleIndex:
    """The policy's index, built on first use and rebuilt if its rule list was replaced."""
    index = policy.index
    if index is None or index.rules is not policy.rules or index.size != len(policy.rules):
        index = policy.index = RuleIndex(policy.rules)
    return index


def decide(policy: Policy, domain: str, targets: list[Target], mode: str | None = None,
           base_risk: str | None = None) -> CallDecision:
    """`base_risk`: the tool's own level (its class's `risk`, runner/tools/base.py); None: the domain's."""
    mode = mode or policy.mode
    base = base_risk or domain_risk(domain)
    decided = tuple(_at_risk(policy, decide_target(policy, t), base) for t in targets)
    decision = strictest([t.decision for t in decided])
    return CallDecision(domain, decision, headless(decision, mode), mode, decided)


def _at_risk(policy: Policy, found: TargetDecision, base: str) -> TargetDecision:
    """The target's risk recorded; a policy rule's `allow` at or above `risk.askAtOrAbove` turned into `ask`. An
    approval (`--approve`, `replay --call`) is not turned: it is the answer to that ask; nor is a `network` rule's
    allow (one of the policy's, or a host of `sandbox.network.allow`): it is the policy's consent to reach that host,
    where egress is decided; nor are the reads a run allows itself (its outputs, the runs it continues, the
    workflow's --skills directories)."""
    level = target_risk(policy, base, found.target)
    if found.decision == "allow" and needs_asking(policy, level) and not (found.rule and _consented(found.rule)):
        threshold = policy.sections["risk"]["askAtOrAbove"]
        effect = f": {found.target.effect}" if found.target.effect else ""
        note = f"risk {level}: the policy asks at or above {threshold} (risk.askAtOrAbove){effect}"
        asked = Target(found.target.domain, found.target.target, found.target.floor, note, found.target.effect)
        return TargetDecision(asked, "ask", None, level)
    return TargetDecision(found.target, found.decision, found.rule, level)


def _consented(rule: Rule) -> bool:
    return rule.source in (APPROVED, OWN_OUTPUTS) or rule.domain == "network"


def approval_scope(d: CallDecision) -> str:
    """Who let the call through, or stopped it (the audit record's approval_scope): `mode` (full_access's auto
    approval, or a headless run denying what nobody could be asked), `call` (an approval of this call by `replay
    --call`), `run` (an `--approve` given to the run), `policy` (the policy's own rules and risk section)."""
    if d.effective == "auto_approved":
        return "mode"
    deciding = [t for t in d.targets if t.decision == d.decision]
    approvals = [t.rule.scope for t in deciding if t.rule is not None and t.rule.source == APPROVED]
    if d.allowed and approvals:
        return "call" if "call" in approvals else "run"
    if d.deciding.rule is None and not (d.deciding.target.note or "").startswith("risk "):
        return "mode"
    return "policy"


def headless(decision: Decision, mode: str) -> str:
    """What a run with nobody to ask does. full_access auto-approves `ask`; `deny` stays deny."""
    if decision == "allow":
        return "allow"
    if decision == "ask" and mode == "full_access":
        return "auto_approved"
    return "deny"
