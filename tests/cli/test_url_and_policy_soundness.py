"""Issue 11 through the real CLI: a URL is decided in the form the HTTP client connects to (and the
SSRF guard sees that same address); a NUL byte in a command, a deeply nested policy, a backtracking
`regex:` rule and a 5,000-rule policy are ordinary outcomes, not crashes or hangs."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest

from bench.bench_policy import policy_text
from tests.fakes.openai_server import reply
from tests.fakes.site import loopback_site


@pytest.fixture
def site() -> Iterator[ThreadingHTTPServer]:
    """A loopback HTTP server that records every request path."""
    with loopback_site(b"ok") as server:
        yield server


def write_policy(workspace: Path, rules: list[dict[str, str]], *, private: bool = True) -> str:
    # Any host may be connected to (a wildcard: loopback still refused by the fetch tool itself, as the
    # egress proxy refuses it), so only the `url:` rules given here decide.
    any_host = {"domain": "network", "pattern": "net:**", "decision": "allow"}
    data: dict[str, object] = {"extends": "default", "permission": {"rules": [any_host, *rules]}}
    if private:
        # The fetch tool refuses loopback by itself; with this only the rule stands in the way.
        data["web"] = {"allowPrivateNetworks": True}
    (workspace / "p.jsonc").write_text(json.dumps(data), encoding="utf-8")
    return "p.jsonc"


def deny(pattern: str) -> dict[str, str]:
    return {"domain": "web_fetch", "pattern": pattern, "decision": "deny"}


def decisions(r) -> list[tuple[str, str]]:
    return [(e["decision"], e["targets"][0]["target"]) for e in r.of_type("permission_decision")]


# --- URLs: every spelling of the denied host is decided as that host ------------------------

ADDRESS_SPELLINGS = {
    "ideographic-dots": "http://127。0。0。1:{port}/x",
    "fullwidth-dots": "http://127．0．0．1:{port}/x",
    "halfwidth-ideographic-dots": "http://127｡0｡0｡1:{port}/x",
    "decimal": "http://2130706433:{port}/x",
    "hex-two-parts": "http://0x7f.1:{port}/x",
    "octal": "http://0177.0.0.1:{port}/x",
    "trailing-dot": "http://127.0.0.1.:{port}/x",
    "escaped-path-and-upper-scheme": "HTTP://127.0.0.1:{port}/%78",
}


@pytest.mark.parametrize("spelling", ADDRESS_SPELLINGS.values(), ids=ADDRESS_SPELLINGS.keys())
def test_a_denied_address_is_denied_however_it_is_written(fake, workspace, agent_run, site, spelling):
    port = site.server_port
    policy = write_policy(workspace, [deny(f"url:http://127.0.0.1:{port}/**")])
    fake.add(reply(calls=[("web_fetch", {"url": spelling.format(port=port)})]), reply("done"))
    r = agent_run("--policy", policy, "--sandbox", "off", "task.md")
    assert site.paths == []
    assert decisions(r) == [("deny", f"url:http://127.0.0.1:{port}/x")]
    assert r.code == 3, r.stderr


NAME_SPELLINGS = {
    "trailing-dot": "http://localhost.:{port}/x",
    "fullwidth-letters": "http://ＬＯＣＡＬＨＯＳＴ:{port}/x",
    "percent-encoded": "http://local%68ost:{port}/x",
}


@pytest.mark.parametrize("spelling", NAME_SPELLINGS.values(), ids=NAME_SPELLINGS.keys())
def test_a_denied_host_name_is_denied_however_it_is_written(fake, workspace, agent_run, site, spelling):
    port = site.server_port
    policy = write_policy(workspace, [deny(f"url:http://localhost:{port}/**")])
    fake.add(reply(calls=[("web_fetch", {"url": spelling.format(port=port)})]), reply("done"))
    r = agent_run("--policy", policy, "--sandbox", "off", "task.md")
    assert site.paths == []
    assert decisions(r) == [("deny", f"url:http://localhost:{port}/x")]
    assert r.code == 3, r.stderr


@pytest.mark.parametrize("url", ["http://user@127。0。0。1:{port}/x", "http://user:pass@127.0.0.1:{port}/x",
                                 "http://127.0.0.1:{port}@localhost:{port}/x"])
def test_credentials_in_a_url_are_refused_whatever_the_policy(fake, workspace, agent_run, site, url):
    policy = write_policy(workspace, [])  # http(s) allowed, loopback allowed: nothing else in the way
    fake.add(reply(calls=[("web_fetch", {"url": url.format(port=site.server_port)})]), reply("done"))
    r = agent_run("--policy", policy, "--sandbox", "off", "task.md")
    assert site.paths == []
    result = r.of_type("tool_result")[0]
    assert result["error_type"] == "InvalidArguments", result
    assert "user@" in result["content"]
    assert r.of_type("permission_decision") == []  # refused before any decision
    assert r.code == 0, r.stderr


def test_a_redirect_is_decided_in_canonical_form(fake, workspace, agent_run, site):
    port = site.server_port
    policy = write_policy(workspace, [deny(f"url:http://127.0.0.1:{port}/x")])
    start = f"http://127.0.0.1:{port}/open?to=http://2130706433:{port}/x"
    fake.add(reply(calls=[("web_fetch", {"url": start})]), reply("done"))
    r = agent_run("--policy", policy, "--sandbox", "off", "task.md")
    assert site.paths == [f"/open?to=http://2130706433:{port}/x"]
    assert decisions(r) == [("allow", f"url:{start}"), ("deny", f"url:http://127.0.0.1:{port}/x")]
    assert r.code == 3, r.stderr


def test_a_redirect_to_a_url_with_credentials_is_refused(fake, workspace, agent_run, site):
    port = site.server_port
    policy = write_policy(workspace, [])
    start = f"http://127.0.0.1:{port}/open?to=http://user@127.0.0.1:{port}/x"
    fake.add(reply(calls=[("web_fetch", {"url": start})]), reply("done"))
    r = agent_run("--policy", policy, "--sandbox", "off", "task.md")
    assert site.paths == [f"/open?to=http://user@127.0.0.1:{port}/x"]
    result = r.of_type("tool_result")[0]
    assert result["error_type"] == "IOError" and "user@" in result["content"], result


@pytest.mark.parametrize("spelling", ["http://0177.0.0.1:{port}/x", "http://2130706433:{port}/x"])
def test_the_ssrf_guard_sees_the_address_the_policy_decided(fake, workspace, agent_run, site, spelling):
    port = site.server_port
    policy = write_policy(workspace, [], private=False)
    fake.add(reply(calls=[("web_fetch", {"url": spelling.format(port=port)})]), reply("done"))
    r = agent_run("--policy", policy, "--sandbox", "off", "task.md")
    assert site.paths == []
    assert decisions(r) == [("allow", f"url:http://127.0.0.1:{port}/x")]
    result = r.of_type("tool_result")[0]
    assert result["error_type"] == "ToolNotAllowed", result
    assert "127.0.0.1 is refused: loopback address" in result["content"]


# --- small ones ----------------------------------------------------------------------------


def test_a_nul_byte_in_a_command_is_an_invalid_arguments_error(fake, workspace, agent_run):
    (workspace / "p.jsonc").write_text(json.dumps({"extends": "default", "permission": {"rules": [
        {"domain": "bash", "pattern": "shell:*", "decision": "allow"}]}}))
    fake.add(reply(calls=[("bash", {"command": "echo a\x00b > out.txt"})]), reply("done"))
    r = agent_run("--policy", "p.jsonc", "--sandbox", "off", "task.md")
    assert r.code == 0, r.stderr
    result = r.of_type("tool_result")[0]
    assert result["error_type"] == "InvalidArguments", result
    assert "NUL" in result["content"]
    assert not (workspace / "out.txt").exists()


DEEP = {
    "objects": '{"a":' * 5000 + "1" + "}" * 5000,
    "arrays": "[" * 5000 + "]" * 5000,
    "unclosed": '{"permission": ' + '{"a":' * 5000,
}
@pytest.mark.parametrize("text", DEEP.values(), ids=DEEP.keys())
def test_a_deeply_nested_policy_is_a_located_error(workspace, agent_run, text):
    path = workspace / "deep.jsonc"
    path.write_text(text, encoding="utf-8")
    where = r":1:\d+: invalid JSONC: nested deeper than \d+ levels"
    check = agent_run("policy", "check", str(path))
    assert check.code == 2, check.stdout + check.stderr
    # policy check names a file inside the current directory relative to it (as the CLI names paths)
    assert re.fullmatch(r"deep\.jsonc" + where, check.stdout.strip()), check.stdout + check.stderr
    run = agent_run("--policy", str(path), "task.md")  # a usage error, before any model call
    assert run.code == 2, run.stderr
    assert "Traceback" not in run.stderr and re.search(re.escape(str(path)) + where, run.stderr), run.stderr


def test_a_backtracking_regex_rule_cannot_outlast_the_run(fake, workspace, agent_run):
    (workspace / "p.jsonc").write_text(json.dumps({"extends": "default", "permission": {"rules": [
        {"domain": "bash", "pattern": "regex:(a+)+$", "decision": "deny"}]}}))
    fake.add(reply(calls=[("bash", {"command": "a" * 64 + "b"})]), reply("done"))
    # A backtracking match of this rule takes longer than the universe has left: the timeouts only stop
    # that hang (the run takes a second or two); the run ending with its ordinary decision is the proof.
    try:
        r = agent_run("--policy", "p.jsonc", "--sandbox", "off", "--timeout", "60", "task.md", timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail("the run was still deciding one regex after 120 s (--timeout 60)")
    assert decisions(r) == [("deny", "shell:" + "a" * 64 + "b")]  # no rule matched: `shell:*` asks
    assert r.code == 3, r.stderr


@pytest.mark.parametrize("regex", ["(?=a)b", "(a)\\1", "(?<!x)y"], ids=["lookahead", "backreference", "lookbehind"])
def test_regex_features_without_a_linear_time_match_are_rejected(workspace, agent_run, regex):
    src = ('{\n  "extends": "default",\n  "permission": { "rules": [\n'
           f'    {{ "domain": "bash", "pattern": {json.dumps("regex:" + regex)}, "decision": "deny" }},\n  ] }},\n}}\n')
    (workspace / "p.jsonc").write_text(src, encoding="utf-8")
    r = agent_run("policy", "check", "p.jsonc")
    assert r.code == 2, r.stdout + r.stderr
    col = src.splitlines()[3].index('"regex:') + 1
    assert r.stdout.startswith(f"p.jsonc:4:{col}: invalid regex "), r.stdout  # as given, inside the directory
    assert "RE2" in r.stdout
    approved = agent_run("--approve", f"bash:regex:{regex}", "task.md")
    assert approved.code == 2, approved.stderr
    assert f"--approve {shlex.quote('bash:regex:' + regex)}: invalid regex {regex!r}" in approved.stderr


def test_a_5000_rule_policy_loads(workspace, agent_run):
    # How fast is bench/bench_policy.py's to measure (machines here are noisy); the timeout only stops a hang
    # (the check takes ~3 s on an idle machine).
    (workspace / "big.jsonc").write_text(policy_text(5000), encoding="utf-8")
    r = agent_run("policy", "check", "big.jsonc", timeout=120)
    assert r.code == 0, r.stdout + r.stderr
    assert "ok (5000 rules" in r.stderr
