"""runner/policy/sandbox_config.py: the mode's precedence, the `sandbox` section, and the network
allow-list as `network` rules, down to how a loaded policy and `policy explain` decide with it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runner.engine.explain import explain
from runner.policy.decide import decide
from runner.policy.jsonc import PolicyError
from runner.policy.load import load_policy
from runner.policy.model import Rule
from runner.policy.sandbox_config import (
    NETWORK_SOURCE,
    SandboxConfig,
    SandboxConfigError,
    config_from,
    net_target,
    network_rules,
    parse_allow_entry,
    resolve_mode,
)
from runner.policy.targets import network_target

# --- resolve_mode -----------------------------------------------------------------------------


def test_the_flag_wins_over_environment_and_policy() -> None:
    assert resolve_mode("off", {"AGENT_RUN_SANDBOX": "required"}, {"mode": "auto"}) == "off"


def test_the_environment_wins_over_the_policy() -> None:
    assert resolve_mode(None, {"AGENT_RUN_SANDBOX": "off"}, {"mode": "required"}) == "off"


def test_the_policy_decides_when_neither_flag_nor_environment_says() -> None:
    assert resolve_mode(None, {}, {"mode": "required"}) == "required"
    assert resolve_mode(None, {"OTHER": "off"}, {"mode": "off"}) == "off"


def test_auto_when_nobody_says() -> None:
    assert resolve_mode(None, {}, {}) == "auto"


def test_an_empty_flag_or_variable_falls_through() -> None:
    assert resolve_mode("", {"AGENT_RUN_SANDBOX": ""}, {"mode": "required"}) == "required"


@pytest.mark.parametrize(("flag", "environ", "section", "source"), [
    ("strict", {}, {}, "--sandbox"),
    (None, {"AGENT_RUN_SANDBOX": "yes"}, {"mode": "auto"}, "AGENT_RUN_SANDBOX"),
    (None, {}, {"mode": "on"}, "policy sandbox.mode"),
])
def test_a_bad_mode_names_its_source(flag: str | None, environ: dict[str, str], section: dict[str, str],
                                     source: str) -> None:
    with pytest.raises(SandboxConfigError) as err:
        resolve_mode(flag, environ, section)
    assert str(err.value).startswith(source + ":")


def test_a_bad_flag_is_reported_even_when_the_environment_is_fine() -> None:
    with pytest.raises(SandboxConfigError, match="--sandbox"):
        resolve_mode("nope", {"AGENT_RUN_SANDBOX": "off"}, {})


# --- config_from ------------------------------------------------------------------------------


def test_network_defaults_to_none() -> None:
    config = config_from({}, "auto")
    assert config == SandboxConfig(mode="auto", network="none")
    assert config.describe_network() == "none"


def test_network_all() -> None:
    config = config_from({"network": "all", "readOnly": ["~/.m2"], "writable": ["/var/cache/build"]}, "required")
    assert (config.mode, config.network, config.allow) == ("required", "all", ())
    assert config.read_only == ("~/.m2",) and config.writable == ("/var/cache/build",)
    assert config.describe_network() == "all"


def test_network_allow_list() -> None:
    config = config_from({"network": {"allow": ["pypi.org", "*.github.com:443"]}}, "auto")
    assert config.network == "allow"
    assert config.allow == ("pypi.org", "*.github.com:443")
    assert config.describe_network() == {"allow": ["pypi.org", "*.github.com:443"]}


@pytest.mark.parametrize("network", ["some", "", 3, ["pypi.org"]])
def test_a_bad_network_value_is_an_error(network: object) -> None:
    with pytest.raises(SandboxConfigError, match=r"sandbox\.network"):
        config_from({"network": network}, "auto")


@pytest.mark.parametrize("entry", ["a/b", "host:99999", ""])
def test_a_bad_allow_entry_is_an_error(entry: str) -> None:
    with pytest.raises(SandboxConfigError, match=r"sandbox\.network\.allow"):
        config_from({"network": {"allow": ["pypi.org", entry]}}, "auto")


# --- parse_allow_entry ------------------------------------------------------------------------


@pytest.mark.parametrize(("entry", "expected"), [
    ("pypi.org", ("pypi.org", ("80", "443"))),
    ("*.github.com", ("*.github.com", ("80", "443"))),
    ("host:8080", ("host", ("8080",))),
    ("host:*", ("host", ("*",))),
    ("[::1]:80", ("[::1]", ("80",))),
    ("[::1]", ("[::1]", ("80", "443"))),
    ("  PyPI.Org.  ", ("pypi.org", ("80", "443"))),
])
def test_parse_allow_entry(entry: str, expected: tuple[str, tuple[str, ...]]) -> None:
    assert parse_allow_entry(entry) == expected


@pytest.mark.parametrize(("entry", "message"), [
    ("a/b", "is not a host"),
    ("https://pypi.org", "is not a host"),
    ("host:99999", "bad port"),
    ("host:0", "bad port"),
    ("host:http", "bad port"),
    ("", "empty host"),
    ("   ", "empty host"),
    (":443", "is not a host"),
])
def test_parse_allow_entry_rejects(entry: str, message: str) -> None:
    with pytest.raises(SandboxConfigError, match=message):
        parse_allow_entry(entry)


# --- net_target and network_rules -------------------------------------------------------------


@pytest.mark.parametrize(("host", "port", "target"), [
    ("api.github.com", 443, "net:api.github.com:443"),
    ("API.GitHub.com.", 80, "net:api.github.com:80"),
    ("::1", 80, "net:[::1]:80"),
    ("[::1]", 80, "net:[::1]:80"),
    ("127.0.0.1", 8080, "net:127.0.0.1:8080"),
])
def test_net_target(host: str, port: int, target: str) -> None:
    assert net_target(host, port) == target


def _matching(rules: list[Rule], target: str) -> list[str]:
    return [r.pattern.raw for r in rules if r.pattern.matches(target)]


def test_network_rules_are_allow_rules_of_the_network_domain() -> None:
    rules = network_rules(SandboxConfig(network="allow", allow=("pypi.org", "host:8080")))
    assert [(r.domain, r.decision, r.source, r.index) for r in rules] == [
        ("network", "allow", NETWORK_SOURCE, 0), ("network", "allow", NETWORK_SOURCE, 0),
        ("network", "allow", NETWORK_SOURCE, 1)]
    assert [r.pattern.raw for r in rules] == ["net:pypi.org:80", "net:pypi.org:443", "net:host:8080"]


def test_no_allow_list_no_rules() -> None:
    assert network_rules(SandboxConfig(network="none")) == []
    assert network_rules(SandboxConfig(network="all")) == []


@pytest.mark.parametrize(("entry", "matched", "unmatched"), [
    ("pypi.org", [("pypi.org", 443), ("pypi.org", 80)],
     [("pypi.org", 8080), ("files.pypi.org", 443), ("pypi.org.evil.example", 443), ("evil.example", 443)]),
    ("*.github.com", [("api.github.com", 443), ("a.b.github.com", 80)],
     [("github.com", 443), ("api.github.com", 8080), ("api.github.com.evil.example", 443), ("evilgithub.com", 443)]),
    ("host:8080", [("host", 8080)], [("host", 443), ("host", 80), ("other", 8080)]),
    ("host:*", [("host", 1), ("host", 443), ("host", 65535)], [("other", 443), ("hostx", 443)]),
    ("[::1]:80", [("::1", 80)], [("::1", 443), ("::2", 80), ("127.0.0.1", 80)]),
    ("127.0.0.1:8080", [("127.0.0.1", 8080)], [("127.0.0.1", 80), ("127.0.0.10", 8080)]),
])
def test_which_targets_each_rule_matches(entry: str, matched: list[tuple[str, int]],
                                         unmatched: list[tuple[str, int]]) -> None:
    rules = network_rules(SandboxConfig(network="allow", allow=(entry,)))
    for host, port in matched:
        assert _matching(rules, net_target(host, port)), (entry, host, port)
    for host, port in unmatched:
        assert not _matching(rules, net_target(host, port)), (entry, host, port)


def test_an_ipv6_rule_is_a_literal_not_a_glob_class() -> None:
    """Unescaped, `[::1]` would be a character class matching one of `:` or `1`."""
    rules = network_rules(SandboxConfig(network="allow", allow=("[::1]:80",)))
    assert _matching(rules, "net:[::1]:80") == ["net:\\[::1\\]:80"]
    assert not _matching(rules, "net:1:80") and not _matching(rules, "net::::80")


# --- through a policy file --------------------------------------------------------------------


def _policy_file(tmp_path: Path, sandbox: dict[str, object]) -> Path:
    path = tmp_path / "policy.json"
    path.write_text(json.dumps({"extends": "default", "sandbox": sandbox}))
    return path


def test_a_loaded_policy_decides_the_network_by_its_allow_list(tmp_path: Path) -> None:
    policy = load_policy(str(_policy_file(tmp_path, {"network": {"allow": ["pypi.org"]}})))
    allowed = decide(policy, "network", [network_target("pypi.org:443")])
    assert allowed.effective == "allow"
    rule = allowed.deciding.rule
    assert rule is not None and rule.source == NETWORK_SOURCE and rule.pattern.raw == "net:pypi.org:443"
    assert decide(policy, "network", [network_target("pypi.org:80")]).effective == "allow"
    for other in ("evil.example:443", "pypi.org:22", "files.pypi.org:443"):
        assert decide(policy, "network", [network_target(other)]).effective == "deny", other


def test_without_an_allow_list_the_network_is_not_allowed(tmp_path: Path) -> None:
    policy = load_policy(str(_policy_file(tmp_path, {"network": "none"})))
    assert decide(policy, "network", [network_target("pypi.org:443")]).effective == "deny"


def test_explain_agrees_with_decide(tmp_path: Path) -> None:
    policy = load_policy(str(_policy_file(tmp_path, {"network": {"allow": ["pypi.org"]}})))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    runs = workspace / ".agent-run" / "runs"
    ok = explain(policy, "network", "pypi.org:443", workspace, runs)
    assert ok["decision"] == "allow" and ok["headless_decision"] == "allow"
    assert ok["targets"][0]["target"] == "net:pypi.org:443"
    assert ok["rule"]["file"] == NETWORK_SOURCE and ok["rule"]["pattern"] == "net:pypi.org:443"
    assert explain(policy, "network", "pypi.org", workspace, runs)["headless_decision"] == "allow"  # port 443
    bad = explain(policy, "network", "evil.example:443", workspace, runs)
    assert bad["headless_decision"] == "deny" and bad["targets"][0]["target"] == "net:evil.example:443"
    assert bad["rule"] is None or bad["rule"]["file"] != NETWORK_SOURCE


def test_a_bad_allow_entry_in_a_policy_file_is_a_policy_error(tmp_path: Path) -> None:
    path = _policy_file(tmp_path, {"network": {"allow": ["pypi.org:99999"]}})  # the schema lets 5 digits by
    with pytest.raises(PolicyError, match="bad port"):
        load_policy(str(path))


def test_a_bare_ipv6_allow_entry_matches_its_bracketed_target() -> None:
    rules = network_rules(config_from({"network": {"allow": ["::1"]}}, "auto"))
    assert any(r.pattern.matches(net_target("::1", 443)) for r in rules)
