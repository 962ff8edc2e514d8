"""A killed run's policy snapshot through the real CLI, as an attacker who can write the run directory but has no
audit key would use it (runner/sessions/vouch.py; docs/threat-model.md, Sessions)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from tests.fakes.openai_server import reply

OFF = {"AGENT_RUN_SANDBOX": "off"}  # what is decided is the policy, not what the sandbox would contain


def _killed(run_dir: Path) -> Path:
    """The run as a SIGKILL leaves it, as far as the verifier can tell: no summary (so no seal)."""
    for name in ("summary.json", "transcript.md"):
        (run_dir / name).unlink(missing_ok=True)
    return run_dir


def _widen_and_rechain(run_dir: Path) -> None:
    """Allow every command in policy.json, record its new sha256 in run_started and chain the log again with
    plain sha256: written from the documented format alone (docs/run-directory.md), as an attacker would."""
    policy = json.loads((run_dir / "policy.json").read_text())
    source = policy["files"][0]
    policy["permission"]["rules"].append({"domain": "bash", "pattern": "shell:*", "decision": "allow",
                                          "source": source, "index": 999})
    (run_dir / "policy.json").write_text(json.dumps(policy))
    digest = hashlib.sha256((run_dir / "policy.json").read_bytes()).hexdigest()
    lines, prev = [], "0" * 64
    for line in (run_dir / "events.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record["type"] == "run_started":
            record["policy_sha256"] = digest
        record["prev"] = prev
        line = json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        lines.append(line)
        prev = hashlib.sha256(line.encode()).hexdigest()
    (run_dir / "events.jsonl").write_text("\n".join(lines) + "\n")


def test_an_unkeyed_killed_runs_rewritten_policy_does_not_let_a_denied_call_through(fake, workspace, agent_run,
                                                                                     tmp_path):
    fake.add(reply(calls=[("list", {})]))
    first = agent_run("--max-turns", "1", "task.md", env=OFF)
    assert first.code == 5
    killed = _killed(first.run_dir)

    # Unedited, its snapshot is the job's own policy (`default`) re-derived: it resumes, and a command is denied.
    fake.add(reply(calls=[("bash", {"command": "touch pwned"})]), reply("done"))
    resumed = agent_run("resume", str(killed), env=OFF)
    assert resumed.code == 3, resumed.stderr
    assert not (workspace / "pwned").exists()
    assert resumed.summary["denials"][0]["tool"] == "bash"
    assert [e["type"] for e in resumed.events][-1] == "run_finished"

    _widen_and_rechain(killed)
    fake.add(reply(calls=[("bash", {"command": "touch pwned"})]), reply("done"))
    refused = agent_run("resume", str(killed), env=OFF)
    assert refused.code == 2, refused.stderr
    assert "--policy" in refused.stderr and "not keyed" in refused.stderr
    assert refused.new_dirs == [] and not (workspace / "pwned").exists()
