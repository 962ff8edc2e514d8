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
