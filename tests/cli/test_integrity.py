"""A run directory is tamper-evident, and `replay` runs only what the recorded run really asked for."""

from __future__ import annotations

import json
import os
import shutil

from runner.record.integrity import GENESIS, line_hash, seal
from tests.fakes.openai_server import reply


def _denied_run(fake, agent_run, command="echo approved-by-a-human > out.txt"):
    fake.add(reply(calls=[("bash", {"command": command})]), reply("done"))
    r = agent_run("--sandbox", "off", "task.md")
    assert r.code == 3
    return r


def _copy(run_dir, tmp_path):
    """A copy to tamper with, under a name the suite's own event-log check does not walk into."""
    target = tmp_path / "tampered" / "run-copy"
    shutil.copytree(run_dir, target)
    return target


def _replay(agent_run, run_dir, *extra):
    return agent_run("replay", str(run_dir), "--approve", "--sandbox", "off", *extra)


def _rewrite_command(run_dir, new):
    path = run_dir / "events.jsonl"
    text = path.read_text()
    old = json.loads(next(line for line in text.splitlines() if '"type":"tool_call"' in line))["arguments"]
    path.write_text(text.replace(json.dumps(old)[1:-1], json.dumps(json.dumps({"command": new}))[1:-1]))


def test_every_run_is_sealed_and_replay_shows_what_it_runs(fake, workspace, agent_run):
    r = _denied_run(fake, agent_run)
    integrity = r.summary["integrity"]
    assert set(integrity["files"]) == {"task.md", "policy.json", "tools.json", "workspace.json", "audit.jsonl"}
    assert len(integrity["sha256"]) == 64
    replayed = _replay(agent_run, r.run_dir, "--expect-hash", integrity["sha256"])
    assert replayed.code == 0, replayed.stderr
    assert "running call_1_0: bash: echo approved-by-a-human > out.txt" in replayed.stderr.replace("call_1", "call_1")
    assert (workspace / "out.txt").read_text() == "approved-by-a-human\n"


def test_an_edited_event_log_is_refused(fake, workspace, agent_run, tmp_path):
    r = _denied_run(fake, agent_run)
    run_dir = _copy(r.run_dir, tmp_path)
    _rewrite_command(run_dir, "touch pwned")
    replayed = _replay(agent_run, run_dir)
    assert replayed.code == 2 and "hash chain is broken" in replayed.stderr + replayed.stdout
    assert not (workspace / "pwned").exists()


def test_a_consistent_rewrite_fails_the_expected_hash(fake, workspace, agent_run, tmp_path):
    r = _denied_run(fake, agent_run)
    run_dir = _copy(r.run_dir, tmp_path)
    published = r.summary["integrity"]["sha256"]
    _rewrite_command(run_dir, "touch pwned")
    # The attacker rebuilds the whole chain and the seal: only a hash kept outside the run dir can tell.
    lines, prev = [], GENESIS
    for line in (run_dir / "events.jsonl").read_text().splitlines():
        record = json.loads(line)
        record["prev"] = prev
        line = json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        lines.append(line)
        prev = line_hash(line)
    (run_dir / "events.jsonl").write_text("\n".join(lines) + "\n")
    summary = json.loads((run_dir / "summary.json").read_text())
    summary["integrity"] = seal(run_dir, prev)
    (run_dir / "summary.json").write_text(json.dumps(summary))
    replayed = _replay(agent_run, run_dir, "--expect-hash", published)
    assert replayed.code == 2 and "is not the expected" in replayed.stderr + replayed.stdout
    assert not (workspace / "pwned").exists()


def test_an_edited_policy_snapshot_is_refused(fake, workspace, agent_run, tmp_path):
    r = _denied_run(fake, agent_run)
    run_dir = _copy(r.run_dir, tmp_path)
    policy = json.loads((run_dir / "policy.json").read_text())
    policy["permission"]["rules"].append({"domain": "*", "pattern": "**", "decision": "allow", "source": "x",
                                          "index": 0})
    (run_dir / "policy.json").write_text(json.dumps(policy))
    replayed = _replay(agent_run, run_dir)
    assert replayed.code == 2 and "policy.json was changed" in replayed.stderr + replayed.stdout


def test_a_run_never_sealed_needs_a_policy_named(fake, workspace, agent_run, tmp_path):
    r = _denied_run(fake, agent_run)
    unsealed = tmp_path / "tampered" / "unsealed"
    shutil.copytree(r.run_dir, unsealed)  # (named so the suite's event-log check skips it: it has no summary)
    (unsealed / "summary.json").unlink()  # as a run killed with SIGKILL leaves it
    replayed = _replay(agent_run, unsealed)
    assert replayed.code == 2 and "--policy" in replayed.stderr + replayed.stdout
    replayed = _replay(agent_run, unsealed, "--policy", "default")
    assert replayed.code == 0, replayed.stderr


def test_resume_records_where_a_masked_secret_breaks_the_prompt_cache(fake, workspace, agent_run):
    token = "ghp_" + "a1B2c3D4e5" * 3 + "f6G7h8"
    fake.add(reply(calls=[("bash", {"command": f"echo {token}"})]),
             reply(calls=[("bash", {"command": "touch denied-one"})]), reply("done"))
    r = agent_run("--approve", "bash:shell:echo *", "--sandbox", "off", "task.md")
    assert r.code == 3 and token not in (r.run_dir / "events.jsonl").read_text()
    fake.add(reply("resumed"))
    resumed = agent_run("replay", str(r.run_dir), "--approve", "--continue", "--sandbox", "off")
    assert resumed.code == 0, resumed.stderr
    assert resumed.summary["prompt_cache_break"]["message_index"] == 2  # system, task, the call echoing it
    assert "[REDACTED:" in json.dumps(fake.requests[-1]["messages"][2])


def test_a_fifo_in_a_recorded_run_is_refused_not_waited_on(fake, workspace, agent_run):
    """A downloaded run directory is untrusted: a FIFO named summary.json would hang the read (exit 2)."""
    fake.add(reply(calls=[("bash", {"command": "echo hi > out.txt"})]), reply("needs approval"))
    first = agent_run("task.md")
    assert first.code == 3
    (first.run_dir / "summary.json").unlink()
    os.mkfifo(first.run_dir / "summary.json")
    for argv in (("replay", str(first.run_dir), "--approve", "--policy", "default"),
                 ("resume", str(first.run_dir))):
        r = agent_run(*argv)
        assert r.code == 2 and "is not a regular file" in r.stderr, (argv, r.stderr)
