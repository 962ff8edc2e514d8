"""`agent-run policy simulate`: a recorded run's calls (read back from its events.jsonl) re-decided under another
policy, through the real click CLI, in-process."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from runner.cli.group import cli

RECORDING = Path(__file__).resolve().parents[2] / "examples" / "hello" / "recording"


def test_simulate_re_decides_every_call_of_a_recorded_run():
    result = CliRunner().invoke(cli, ["policy", "simulate", "--policy", "strict", "--json", str(RECORDING)])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert (data["calls"], data["newly_allowed"], data["newly_denied"]) == (3, 0, 2)
    assert [(c["call_id"], c["tool"], c["before"], c["after"]) for c in data["changed"]] == [
        ("call_2_0", "bash", "allow", "deny"), ("call_3_0", "write", "allow", "deny")]
    assert json.loads(data["changed"][0]["arguments"]) == {"command": "wc -l src/app.py src/util.py"}


def test_simulate_fails_on_new_denials_when_asked():
    result = CliRunner().invoke(cli, ["policy", "simulate", "--policy", "default", "--fail-on-new-denials",
                                      str(RECORDING)])
    assert result.exit_code == 3 and "1 call(s) newly denied" in result.output


def test_policy_files_are_named_relative_to_where_the_commands_run(workspace, agent_run):
    """Issue 42, item 10, through the real executable: `policy check`, `explain` and `simulate` name a policy file
    inside the directory they run in relative to it, never by this machine's absolute path."""
    (workspace / "conf").mkdir()
    (workspace / "conf" / "p.jsonc").write_text(
        '{\n  "extends": "default",\n  "permission": {"rules": [\n'
        '    {"domain": "bash", "pattern": "shell:wc *", "decision": "deny"}]}\n}\n')
    checked = agent_run("policy", "check", "conf/p.jsonc")
    assert checked.code == 0 and checked.stderr.startswith("conf/p.jsonc: ok ("), checked.stderr
    explained = agent_run("policy", "explain", "--policy", "conf/p.jsonc", "bash", "wc -l a.py")
    assert "rule: shell:wc * -> deny  (conf/p.jsonc:4, rule 0)" in explained.stdout, explained.stdout
    simulated = agent_run("policy", "simulate", "--policy", str(workspace / "conf" / "p.jsonc"), "--json",
                          str(RECORDING))
    assert simulated.code == 0, simulated.stderr
    data = json.loads(simulated.stdout)
    assert data["policy"] == "conf/p.jsonc"
    assert [(c["tool"], c["after"], c["decision"]["rule"]["file"]) for c in data["changed"]] == [
        ("bash", "deny", "conf/p.jsonc")]
    for out in (checked, explained, simulated):
        assert str(workspace) not in out.stdout + out.stderr
