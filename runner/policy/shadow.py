"""A rule that can never decide: a later rule matches every target it matches, and the last match decides
(runner/policy/decide.py). `agent-run config show` names the user's config rules the policy's rules shadow this way
(the user's rules come before the policy's: runner/run/repoconfig.py), so that the operator is not left guessing.

Sound, not complete: a later rule is said to shadow one only when it surely matches all it matches — a catch-all
(`*`, `**`, or `SCHEME:**` over that scheme's rule) or the same pattern, in a domain that covers the rule's."""

from __future__ import annotations

from pathlib import Path

from runner.policy.load import shipped_dir
from runner.policy.match import TEXT_SCHEMES, split_target
from runner.policy.model import Rule


def from_file(rules: list[Rule], source: str) -> list[tuple[Rule, Rule | None]]:
    """Each rule of `rules` from the file `source`, with the first later rule that matches every target it matches
    (it never decides), or None."""
    return [(rule, next((later for later in rules[i + 1:] if covers(later, rule)), None))
            for i, rule in enumerate(rules) if rule.source == source]


def why(later: Rule) -> str:
    """What a shadowed rule's report says of the rule that shadows it."""
    return (f"shadowed by policy rule {later.index} of {_named(later.source)}: `{later.domain} "
            f"{later.pattern.raw}` {later.decision}; it never decides")


def _named(source: str) -> str:
    """A shipped policy by the name a user gives it (where the package lies is an install's detail), else the file."""
    path = Path(source)
    return f"the shipped `{path.stem}`" if path.parent == shipped_dir() and path.suffix == ".jsonc" else source


def covers(later: Rule, rule: Rule) -> bool:
    """`later` surely matches every target `rule` matches."""
    if later.domain not in ("*", rule.domain):
        return False
    if later.pattern.raw == rule.pattern.raw:
        return True
    if later.pattern.kind != "glob":
        return False
    scheme, body = split_target(later.pattern.raw)
    if later.pattern.raw not in ("*", "**") and not (body == "**" and scheme and scheme == rule.pattern.scheme):
        return False
    # A text glob's `**` does not match an empty command (`shell:`): the rule must not match one either.
    texts = (rule.pattern.scheme,) if rule.pattern.scheme else tuple(TEXT_SCHEMES)
    return not any(rule.pattern.matches(f"{s}:") and not later.pattern.matches(f"{s}:") for s in texts
                   if s in TEXT_SCHEMES)
