"""What a `network` decision means for a connection: one rule for every way out of a run.

The sandbox's egress proxy (runner/sandbox/proxy.py) and the in-process tools that reach the
network (runner/tools/web_fetch.py) both connect only after a `network` decision on
`net:HOST:PORT`, and both read it here: allowed or not, and whether the deciding rule names the
host exactly. Only an exact rule may lead to a private or loopback address: a wildcard such as
`net:*.example.com:443` says nothing about where a name resolves to today (DNS rebinding), and an
auto-approved `ask` (full_access) was never written for that host at all.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from runner.policy.decide import CallDecision
from runner.policy.model import Target
from runner.policy.sandbox_config import net_target

_DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    exact: bool  # the deciding rule names this host exactly (may then be private/loopback)
    reason: str = ""


def net_verdict(decision: CallDecision) -> Verdict:
    """What a connection does with a `network` decision. Only a rule naming the host exactly (no
    wildcard, no regex, not auto-approved) lets it reach a loopback or private address."""
    rule = decision.deciding.rule
    exact = (rule is not None and decision.effective == "allow" and not rule.pattern.raw.startswith("regex:")
             and not any(c in rule.pattern.raw for c in "*?"))
    where = f"rule {rule.pattern.raw} from {rule.source}" if rule else "no rule allows it"
    return Verdict(decision.allowed, exact, where)


def url_net_target(canonical_url: str) -> Target | None:
    """The `network` target an http(s) URL (in normalize_url's form) connects to: `net:HOST:PORT`,
    the form the egress proxy decides, so one `--approve network:net:HOST:PORT` covers both. None for
    another scheme (nothing is fetched from it)."""
    parts = urlsplit(canonical_url)
    default = _DEFAULT_PORTS.get(parts.scheme)
    if default is None or not parts.hostname:
        return None
    # urlsplit drops an IPv6 literal's brackets; net_target puts them back.
    return Target("network", net_target(parts.hostname, parts.port or default))
