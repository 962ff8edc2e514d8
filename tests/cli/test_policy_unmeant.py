"""A policy that says what it cannot mean is refused, through the real CLI (issue 26, item 14): an unknown key in
any section (`bash`, `sandbox`, an MCP server's entry, ...) and a rule pattern naming a target scheme no tool
produces (`vault:`) were silently ignored; now each is `file:line:col: message` with a did-you-mean where a
known name is close, exit 2, from `policy check` and from `run --policy` alike."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.conftest import agent_run_argv, clean_env

UNMEANT = """{
  "extends": "default",
  "bash": { "maxTimeoutSecond": 600 },
  "sandbox": { "mode": "off", "netwrok": "none" },
  "mcpServers": { "s": { "command": "true", "arg": [] } },
  "permission": {
    "rules": [
      { "domain": "read", "pattern": "vault:secret/**", "decision": "deny" },
      { "domain": "edit", "pattern": "worksapce:src/**", "decision": "allow" },
    ],
  },
}
"""


def _where(text: str, row: int, needle: str) -> tuple[int, int]:
    return row, text.splitlines()[row - 1].index(needle) + 1


EXPECTED = [
    (_where(UNMEANT, 3, '"maxTimeoutSecond"'), "unknown key 'maxTimeoutSecond' in bash: did you mean "
                                                "'maxTimeoutSeconds'?"),
    (_where(UNMEANT, 4, '"netwrok"'), "unknown key 'netwrok' in sandbox: did you mean 'network'?"),
    (_where(UNMEANT, 5, '"arg"'), "unknown key 'arg' in mcpServers.s: did you mean 'args'?"),
    (_where(UNMEANT, 8, '"vault:'), "unknown target scheme 'vault:' in pattern 'vault:secret/**' (known schemes: "),
    (_where(UNMEANT, 9, '"worksapce:'), "unknown target scheme 'worksapce:' in pattern 'worksapce:src/**' "
                                         "(did you mean 'workspace:'?)"),
]


def test_policy_check_names_each_unmeant_key_and_scheme(tmp_path):
    policy = tmp_path / "p.jsonc"
    policy.write_text(UNMEANT, encoding="utf-8")
    proc = subprocess.run([*agent_run_argv(), "policy", "check", str(policy)], capture_output=True, text=True,
                          env=clean_env(), timeout=120)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == len(EXPECTED), lines
    for line, ((row, col), message) in zip(lines, EXPECTED, strict=True):
        assert line.startswith(f"{policy}:{row}:{col}: {message}"), line


def test_run_refuses_the_policy_with_the_first_problem(fake, workspace, agent_run):
    policy = workspace / "p.jsonc"
    policy.write_text(UNMEANT, encoding="utf-8")
    r = agent_run("--policy", "p.jsonc", "task.md", timeout=120)
    assert r.code == 2, r.stderr
    (row, col), message = EXPECTED[0]
    assert f"p.jsonc:{row}:{col}: {message}" in r.stderr
    assert r.summary["status"] == "usage_error" and r.summary["exit_code"] == 2
    assert [json.loads(line)["type"] for line in (r.run_dir / "events.jsonl").read_text().splitlines()][-1] == \
        "run_finished"
    assert fake.requests == []


def test_run_refuses_an_unknown_scheme_in_a_rule(fake, workspace, agent_run):
    Path(workspace / "p.jsonc").write_text(json.dumps({"extends": "default", "permission": {"rules": [
        {"domain": "read", "pattern": "vault:secret/**", "decision": "deny"}]}}), encoding="utf-8")
    r = agent_run("--policy", "p.jsonc", "task.md", timeout=120)
    assert r.code == 2, r.stderr
    col = json.dumps({"extends": "default", "permission": {"rules": [{"domain": "read", "pattern": ""}]}}).index(
        '"pattern": ') + len('"pattern": ') + 1
    assert f"p.jsonc:1:{col}: unknown target scheme 'vault:'" in r.stderr
    assert r.summary["status"] == "usage_error"
    assert fake.requests == []


def test_approve_with_an_unknown_scheme_is_refused(fake, workspace, agent_run):
    r = agent_run("--approve", "read:vault:secret/**", "task.md", timeout=120)
    assert r.code == 2, r.stderr
    assert "unknown target scheme 'vault:'" in r.stderr
    assert fake.requests == []
