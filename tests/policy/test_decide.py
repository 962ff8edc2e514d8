"""Decisions: the last matching rule wins per target, the strictest target wins per call."""

from __future__ import annotations

import pytest

from runner.policy.decide import decide as _decide
from runner.policy.decide import decide_target as _decide_target
from runner.policy.match import compile_pattern
from runner.policy.model import Policy, Rule, Target


def decide(policy, domain, targets, mode=None):
    """Targets given as strings are targets of the call's own domain."""
    return _decide(policy, domain, [t if isinstance(t, Target) else Target(domain, t) for t in targets], mode)


def decide_target(policy, domain, target):
    return _decide_target(policy, Target(domain, target))


def policy(*rules: tuple[str, str, str], mode: str = "agent") -> Policy:
    compiled = [Rule(d, compile_pattern(p), dec, "test.jsonc", i) for i, (d, p, dec) in enumerate(rules)]
    return Policy("test.jsonc", mode, compiled, ["test.jsonc"])


def test_last_matching_rule_wins():
    p = policy(("read", "**", "deny"), ("read", "workspace:**", "allow"), ("read", "workspace:secret/**", "deny"))
    assert decide_target(p, "read", "workspace:src/a.py").rule.index == 1
    assert decide_target(p, "read", "workspace:src/a.py").decision == "allow"
    assert decide_target(p, "read", "workspace:secret/key").rule.index == 2
    assert decide_target(p, "read", "workspace:secret/key").decision == "deny"
    assert decide_target(p, "read", "fs:/etc/hosts").rule.index == 0


def test_order_matters_not_specificity():
    # A broad rule after a narrow one overrides it.
    p = policy(("read", "workspace:secret/**", "deny"), ("read", "workspace:**", "allow"))
    assert decide_target(p, "read", "workspace:secret/key").decision == "allow"


def test_nothing_matching_is_ask_and_headless_deny():
    p = policy(("read", "workspace:**", "allow"))
    target = decide_target(p, "read", "fs:/etc/hosts")
    assert (target.decision, target.rule) == ("ask", None)
    call = decide(p, "read", ["fs:/etc/hosts"])
    assert (call.decision, call.effective, call.allowed) == ("ask", "deny", False)


def test_empty_policy_asks():
    call = decide(policy(), "bash", ["shell:ls"])
    assert (call.decision, call.effective) == ("ask", "deny")


def test_rules_for_other_domains_do_not_apply():
    p = policy(("edit", "**", "allow"))
    assert decide_target(p, "read", "workspace:a").rule is None
    assert decide_target(p, "edit", "workspace:a").decision == "allow"


@pytest.mark.parametrize("domain", ["read", "edit", "bash", "web_fetch", "web_search", "mcp", "task"])
def test_star_domain_applies_to_every_domain(domain):
    p = policy(("*", "**", "deny"))
    assert decide_target(p, domain, "workspace:a").decision == "deny"


def test_specific_domain_after_star_wins():
    p = policy(("*", "**", "deny"), ("read", "**", "allow"))
    assert decide(p, "read", ["workspace:a"]).decision == "allow"
    assert decide(p, "edit", ["workspace:a"]).decision == "deny"


@pytest.mark.parametrize(
    ("decisions", "expected"),
    [
        (["allow", "allow"], "allow"),
        (["allow", "ask"], "ask"),
        (["ask", "allow"], "ask"),
        (["allow", "deny", "ask"], "deny"),
        (["deny", "allow"], "deny"),
    ],
)
def test_strictest_target_wins(decisions, expected):
    p = policy(*((("edit", f"workspace:{i}", d)) for i, d in enumerate(decisions) if d != "ask"))
    targets = [f"workspace:{i}" for i in range(len(decisions))]
    call = decide(p, "edit", targets)
    assert call.decision == expected
    assert [t.decision for t in call.targets] == decisions
    assert call.deciding.target.target == targets[decisions.index(expected)]


def test_deciding_is_the_first_strictest_target():
    p = policy(("edit", "workspace:**", "deny"))
    call = decide(p, "edit", ["workspace:a", "workspace:b"])
    assert call.deciding.target.target == "workspace:a"
    assert call.deciding.rule.index == 0


def test_allow_is_effective_allow():
    call = decide(policy(("bash", "shell:ls", "allow")), "bash", ["shell:ls"])
    assert (call.effective, call.allowed) == ("allow", True)


def test_full_access_auto_approves_ask():
    p = policy(("bash", "shell:*", "ask"), mode="full_access")
    call = decide(p, "bash", ["shell:make"])
    assert (call.decision, call.effective, call.allowed) == ("ask", "auto_approved", True)
    # Nothing matching is also an ask, so also auto-approved.
    unmatched = decide(p, "web_fetch", ["url:https://example.com"])
    assert (unmatched.decision, unmatched.effective) == ("ask", "auto_approved")


def test_full_access_keeps_explicit_deny():
    p = policy(("*", "**", "ask"), ("bash", "shell:rm *", "deny"), mode="full_access")
    call = decide(p, "bash", ["shell:rm -rf /"])
    assert (call.decision, call.effective, call.allowed) == ("deny", "deny", False)


def test_full_access_deny_among_targets_still_denies():
    p = policy(("edit", "workspace:**", "ask"), ("edit", "workspace:.git/**", "deny"), mode="full_access")
    call = decide(p, "edit", ["workspace:a", "workspace:.git/config"])
    assert call.effective == "deny"
    assert call.deciding.target.target == "workspace:.git/config"
