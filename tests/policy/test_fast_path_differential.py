"""The indexed fast path (runner/policy/index.py) decides exactly as the plain linear walk from the last rule:
the same decision and the same deciding rule (the audit names it), over seeded random policies and targets
built to meet at the edges a literal prefilter could get wrong: shared prefixes and suffixes, `//`, `.`,
trailing slashes, escapes, ` *` commands and their bare form, `regex:` rules with and without a scheme,
alternations, anchors, case flags, every domain and scheme, narrowing policies and floors."""

from __future__ import annotations

import random

import pytest

from runner.policy.decide import decide_target, decide_target_linear, rule_index
from runner.policy.domains import DOMAINS
from runner.policy.index import glob_prefix, glob_suffix, regex_literals
from runner.policy.match import SCHEMES, compile_pattern
from runner.policy.model import Policy, Rule, Target

WORDS = ["src", "srcx", "a", "ab", "b", "lib", "module5", "module55", "x.py", "a.py", ".env", "secret.txt",
         "git", "npm", "test", "tool5", "tool55", "--danger", "host5.example.com", "https:", "."]
SEPARATORS = ["/", "/", "//", " ", "", ":"]
GLOB_BITS = ["*", "**", "?", "**/", "/**", "[ab]", "[!a]", "\\*", " *", "{a}", "!"]
REGEX_BITS = [".*", "(build|test)", "( .*)?", "[a-z]+", "\\.", "a|b", "^", "$", "(?i)", "x?", "\\d+", "(?:ab)",
              "[[:alpha:]]", "[a&&b]"]
DECISIONS = ["allow", "deny", "ask"]


def literal(rng: random.Random) -> str:
    return "".join(rng.choice(WORDS) + rng.choice(SEPARATORS) for _ in range(rng.randint(1, 3))).rstrip(":")


def glob_text(rng: random.Random) -> str:
    parts = [literal(rng) if rng.random() < 0.6 else rng.choice(GLOB_BITS) for _ in range(rng.randint(1, 4))]
    return "".join(parts) or "*"


def regex_text(rng: random.Random) -> str:
    if rng.random() < 0.1:  # a literal end that reaches back into `scheme:`
        return ".*" + rng.choice(["ce:", "ll:", "s:", ":"]) + literal(rng).replace(".", "\\.")
    if rng.random() < 0.1:
        return "(?i)" + literal(rng).replace(".", "\\.") + rng.choice(["", ".*"])
    parts = [literal(rng).replace(".", "\\.") if rng.random() < 0.55 else rng.choice(REGEX_BITS)
             for _ in range(rng.randint(1, 4))]
    return "".join(parts)


def pattern(rng: random.Random) -> str:
    roll = rng.random()
    scheme = f"{rng.choice(SCHEMES)}:" if rng.random() < 0.6 else ""
    if roll < 0.3:
        return f"regex:{scheme if rng.random() < 0.5 else ''}{regex_text(rng)}"
    if roll < 0.33:
        return rng.choice(["*", "**", "workspace:*", ".", "workspace:."])
    return scheme + glob_text(rng) + (" *" if rng.random() < 0.15 else "")


def compiled(text: str) -> object:
    try:
        return compile_pattern(text)
    except ValueError:  # an invalid regex never reaches a decision: a load error
        return None


def random_policy(rng: random.Random, size: int) -> Policy:
    rules = []
    while len(rules) < size:
        made = compiled(pattern(rng))
        if made is not None:
            domain = "*" if rng.random() < 0.25 else rng.choice(DOMAINS)
            rules.append(Rule(domain, made, rng.choice(DECISIONS), "gen.jsonc", len(rules)))  # type: ignore[arg-type]
    return Policy("gen.jsonc", "agent", rules, ["gen.jsonc"])


def target(rng: random.Random, policy: Policy) -> Target:
    """A target often derived from a rule's own text and domain (so rules do match), sometimes anything."""
    domain = rng.choice([*DOMAINS, "other"])
    floor = rng.choice(["allow", "allow", "ask"])
    if rng.random() < 0.4 or not policy.rules:
        body = literal(rng) + rng.choice(["", "/", " x"])
        return Target(domain, f"{rng.choice(SCHEMES)}:{body}" if rng.random() < 0.9 else body, floor)  # type: ignore[arg-type]
    rule = rng.choice(policy.rules)
    domain = domain if rule.domain == "*" else rule.domain
    raw = rule.pattern.raw.removeprefix("regex:")
    folded = raw.startswith("(?i)")
    raw = raw.removeprefix("(?i)")
    if raw.endswith(" *") and rng.random() < 0.3:
        raw = raw[:-2]  # `git *` also matches the bare `git`
    body = "".join(unescaped(rng, raw)) + rng.choice(["", "", "", "/", "//x", " --fast", "\n", ".py"])
    if rng.random() < (0.5 if folded else 0.05):
        body = body.swapcase()
    if ":" in body and rng.random() < (0.6 if raw.startswith(".*") else 0.2):
        # `.*ce:x` fully matches `workspace:x`, whose rest is only `x`
        body = rng.choice(SCHEMES) + body[body.index(":"):]
    if body.split(":")[0] not in SCHEMES or rng.random() < 0.2:
        body = f"{rng.choice([*SCHEMES, 'other'])}:{body}" if rng.random() < 0.9 else body
    return Target(domain, body, floor)  # type: ignore[arg-type]


def unescaped(rng: random.Random, raw: str) -> list[str]:
    """The pattern's text with each wildcard replaced by a word and each escaped character taken literally."""
    out, chars = [], iter(raw)
    for c in chars:
        if c == "\\":
            out.append(next(chars, ""))
        else:
            out.append(rng.choice(WORDS[:6]) if c in "*?[]()|+^$" else c)
    return out


def check(policy: Policy, target: Target) -> None:
    fast, slow = decide_target(policy, target), decide_target_linear(policy, target)
    assert (fast.decision, fast.rule) == (slow.decision, slow.rule), target


@pytest.mark.parametrize("seed", range(8))
def test_fast_path_decides_as_the_linear_walk(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(6):
        policy = random_policy(rng, rng.choice([1, 5, 30, 120]))
        if rng.random() < 0.3:
            policy = policy.narrowed(random_policy(rng, 20))
        for _ in range(60):
            check(policy, target(rng, policy))


def test_an_opaque_rule_and_a_replaced_rule_list_are_honoured() -> None:
    """A rule whose test is code (the git-control hard limit) is tried for every target; a policy whose
    rule list is replaced (a resumed run dropping a file's rules) is re-indexed."""
    custom = Rule("edit", compile_pattern("**").__class__("<code>", "", lambda s, r: r.endswith(".lock")),
                  "deny", "<hard limit>", 0)
    policy = Policy("p", "agent", [Rule("*", compile_pattern("**"), "allow", "p", 0), custom], ["p"])
    assert decide_target(policy, Target("edit", "workspace:a/b.lock")).rule is custom
    first = rule_index(policy)
    policy.rules = policy.rules[:1]
    assert decide_target(policy, Target("edit", "workspace:a/b.lock")).decision == "allow"
    assert rule_index(policy) is not first


@pytest.mark.parametrize(("text", "expected"), [
    ("shell:cmd5 (build|test)( .*)?", ("shell:cmd5 ", "")),
    ("generated/v5/.*\\.json", ("generated/v5/", ".json")),
    ("a|b", ("", "")),
    ("(?i)abc", ("", "")),
    ("(?:ab)c+", ("ab", "")),
    ("\\Qab\\E", ("", "")),  # RE2 syntax Python does not read: no literal, so the rule is always tried
    ("x[[:alpha:]]", ("", "")),  # RE2's POSIX class: Python would read a class then a literal `]`
])
def test_regex_literals(text: str, expected: tuple[str, str]) -> None:
    assert regex_literals(text) == expected


def test_glob_literals() -> None:
    assert glob_prefix("src/module5/**") == "src/module5/"
    assert glob_suffix("**/*.gen7", path=True) == ".gen7"
    assert glob_suffix("**/secret.txt", path=True) == "secret.txt"
    assert glob_suffix("**/secret.txt", path=False) == "/secret.txt"
    assert glob_prefix("a\\*b") == "a"
