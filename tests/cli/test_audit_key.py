"""A keyed audit chain (AGENT_RUN_AUDIT_KEY), through the real CLI: a keyed run's `prev` links are HMACs that
only the key can forge; with the key set, a run the key cannot vouch for is refused unless --allow-unkeyed;
and the key never reaches a command, not even through /proc, nor the run's record."""

from __future__ import annotations

import hashlib
import hmac
import json
import shutil
from pathlib import Path

import pytest

from tests.fakes.event_schema import register_audit_key
from tests.fakes.openai_server import reply

KEY = "audit-key-for-tests-0123456789abcdef"
OTHER = "another-audit-key-9876543210fedcba"
KEYED = {"AGENT_RUN_AUDIT_KEY": KEY}
KEY_ID = hmac.new(KEY.encode(), b"agent-run key id", hashlib.sha256).hexdigest()[:16]
GENESIS = "0" * 64


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture(autouse=True)
def _keys() -> None:
    """The suite's event-log check recomputes keyed links: it must know the keys these tests use."""
    register_audit_key(KEY.encode())
    register_audit_key(OTHER.encode())


def _denied_run(fake, agent_run, *flags: str, env: dict[str, str] | None = None):
    """A run whose one bash call the default policy denies: something `replay --approve` would execute."""
    fake.add(reply(calls=[("bash", {"command": "echo approved-by-a-human > out.txt"})]), reply("done"))
    r = agent_run(*flags, "task.md", env=env)
    assert r.code == 3, r.stderr
    return r


def _copy(run_dir: Path, tmp_path: Path) -> Path:
    """A copy to tamper with, under a name the suite's own event-log check does not walk into."""
    target = tmp_path / "tampered" / "run-copy"
    shutil.copytree(run_dir, target)
    return target


def _replay(agent_run, run_dir: Path, *extra: str, env: dict[str, str] | None = KEYED):
    return agent_run("replay", str(run_dir), "--approve", "--sandbox", "off", *extra, env=env)


def _rechain_without_the_key(run_dir: Path, command: str, *, drop_key_id: bool) -> None:
    """What an attacker without the key can do: change the approved command, rebuild every link with plain
    sha256 and reseal the summary (optionally passing the run off as an unkeyed one). Written from the
    documented format alone (docs/run-directory.md), as an attacker would."""
    lines, prev = [], GENESIS
    for line in (run_dir / "events.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record["type"] == "tool_call":
            record["arguments"] = json.dumps({"command": command})
        if record["type"] == "run_started" and drop_key_id:
            record["audit_key_id"] = None
        record["prev"] = prev
        line = json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        lines.append(line)
        prev = _sha256(line.encode())
    (run_dir / "events.jsonl").write_text("\n".join(lines) + "\n")
    summary = json.loads((run_dir / "summary.json").read_text())
    files = {name: _sha256((run_dir / name).read_bytes()) for name in summary["integrity"]["files"]}
    final = _sha256(json.dumps({"events_head": prev, "files": files}, sort_keys=True, separators=(",", ":"),
                               ensure_ascii=False).encode())
    summary["integrity"] = {"events_head": prev, "files": files, "keyed": not drop_key_id, "sha256": final}
    (run_dir / "summary.json").write_text(json.dumps(summary))


@pytest.mark.usefixtures("sandbox_available")
def test_a_keyed_run_chains_with_hmac_verifies_and_resumes(fake, workspace, agent_run):
    r = _denied_run(fake, agent_run, "--sandbox", "required", env=KEYED)
    assert r.of_type("run_started")[0]["audit_key_id"] == KEY_ID
    assert r.summary["integrity"]["keyed"] is True
    lines = (r.run_dir / "events.jsonl").read_text().splitlines()
    prev = GENESIS
    for line in lines:  # each link is the HMAC of the line before, as the decision says, computed here by hand
        assert json.loads(line)["prev"] == prev
        prev = hmac.new(KEY.encode(), line.encode(), hashlib.sha256).hexdigest()
    assert r.summary["integrity"]["events_head"] == prev
    for path in r.run_dir.rglob("*"):  # the key itself is nowhere in the record
        assert not path.is_file() or KEY.encode() not in path.read_bytes(), path
    fake.add(reply("resumed"))
    resumed = agent_run("resume", str(r.run_dir), "--sandbox", "required", env=KEYED)
    assert resumed.code == 0, resumed.stderr
    assert resumed.summary["integrity"]["keyed"] is True
    replayed = _replay(agent_run, r.run_dir, "--expect-hash", r.summary["integrity"]["sha256"])
    assert replayed.code == 0, replayed.stderr
    assert (workspace / "out.txt").read_text() == "approved-by-a-human\n"


@pytest.mark.usefixtures("sandbox_available")
@pytest.mark.parametrize("drop_key_id", [False, True], ids=["keyed-rechained", "passed-off-as-unkeyed"])
def test_a_log_rechained_without_the_key_is_refused(fake, workspace, agent_run, tmp_path, drop_key_id):
    r = _denied_run(fake, agent_run, "--sandbox", "required", env=KEYED)
    run_dir = _copy(r.run_dir, tmp_path)
    _rechain_without_the_key(run_dir, "touch pwned", drop_key_id=drop_key_id)
    replayed = _replay(agent_run, run_dir)
    out = replayed.stderr + replayed.stdout
    assert replayed.code == 2, out
    assert ("is not keyed" if drop_key_id else "hash chain is broken") in out
    assert not (workspace / "pwned").exists()


def test_with_the_key_set_an_unkeyed_run_is_refused_unless_allowed(fake, workspace, agent_run):
    r = _denied_run(fake, agent_run, "--sandbox", "off")  # no key: a plain chain
    for argv in (["replay", str(r.run_dir), "--approve", "--sandbox", "off"],
                 ["resume", str(r.run_dir), "--sandbox", "off"], ["fork", str(r.run_dir), "--sandbox", "off"]):
        refused = agent_run(*argv, env=KEYED)
        assert refused.code == 2 and "--allow-unkeyed" in refused.stderr, (argv, refused.stderr)
        assert not refused.new_dirs
    assert not (workspace / "out.txt").exists()
    assert r.summary["integrity"]["keyed"] is False and r.of_type("run_started")[0]["audit_key_id"] is None
    fake.add(reply("forked"))
    forked = agent_run("fork", str(r.run_dir), "--allow-unkeyed", "--sandbox", "off", env=KEYED)
    assert forked.code == 0, forked.stderr
    fake.add(reply("resumed"))
    resumed = agent_run("resume", str(r.run_dir), "--allow-unkeyed", "--sandbox", "off", env=KEYED)
    assert resumed.code == 0, resumed.stderr
    replayed = _replay(agent_run, r.run_dir, "--allow-unkeyed", "--force")
    assert replayed.code == 0, replayed.stderr
    assert (workspace / "out.txt").read_text() == "approved-by-a-human\n"


@pytest.mark.usefixtures("sandbox_available")
def test_a_run_under_another_key_is_refused(fake, workspace, agent_run):
    r = _denied_run(fake, agent_run, "--sandbox", "required", env={"AGENT_RUN_AUDIT_KEY": OTHER})
    refused = _replay(agent_run, r.run_dir)
    assert refused.code == 2 and "another key" in refused.stderr, refused.stderr
    without = _replay(agent_run, r.run_dir, env={})  # no key now: the chain cannot be checked at all
    assert without.code == 2 and "AGENT_RUN_AUDIT_KEY is not set" in without.stderr, without.stderr
    assert not (workspace / "out.txt").exists()


def test_without_the_sandbox_a_run_is_not_claimed_keyed(fake, workspace, agent_run):
    r = _denied_run(fake, agent_run, "--sandbox", "off", env=KEYED)
    assert r.summary["integrity"]["keyed"] is False
    warnings = [e for e in r.of_type("warning") if e["code"] == "audit_key_unused"]
    assert warnings and "AGENT_RUN_AUDIT_KEY" in r.stderr
    refused = _replay(agent_run, r.run_dir)  # its commands could have read the key: the key cannot vouch for it
    assert refused.code == 2 and "without the sandbox" in refused.stderr, refused.stderr
    allowed = _replay(agent_run, r.run_dir, "--allow-unkeyed")
    assert allowed.code == 0, allowed.stderr


@pytest.mark.usefixtures("sandbox_available")
def test_no_command_sees_the_key(fake, workspace, agent_run):
    policy = workspace / "p.jsonc"  # even a policy that passes every variable on does not pass the key
    policy.write_text(json.dumps({"extends": "default", "bash": {"env": {"passthrough": ["*"]}}}))
    # The command, its parent, the namespace's first process, /proc/self: a file, so every path is literal to
    # bash and the policy's shell analysis has nothing to ask about.
    (workspace / "probe.sh").write_text("env | grep -c AUDIT_KEY\nfor p in $PPID 1 self; do\n"
                                        "  tr '\\0' '\\n' < /proc/$p/environ | grep -c AUDIT_KEY\ndone\ntrue\n")
    fake.add(reply(calls=[("bash", {"command": "bash probe.sh"})]), reply(f"the key would be {KEY}"))
    r = agent_run("--policy", str(policy), "--approve", "bash:shell:*", "--sandbox", "required", "task.md",
                  env=KEYED)
    assert r.code == 0, r.stderr
    seen = fake.requests[-1]["messages"][-1]["content"]  # what the probe printed, as the model received it
    assert seen.split() == ["0", "0", "0", "0"], seen
    assert r.summary["integrity"]["keyed"] is True
    for path in r.run_dir.rglob("*"):  # a model that learnt it is masked like any secret value
        assert not path.is_file() or KEY.encode() not in path.read_bytes(), path
    assert "[REDACTED:env:AGENT_RUN_AUDIT_KEY]" in r.summary["answer"]


def test_an_mcp_config_cannot_hand_the_key_to_a_server(fake, workspace, agent_run, tmp_path):
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"s": {"command": "true", "env": {"K": "${AGENT_RUN_AUDIT_KEY}"}}}}))
    r = agent_run("--mcp-config", str(config), "--sandbox", "off", "task.md", env=KEYED)
    assert r.code == 2 and "AGENT_RUN_AUDIT_KEY is not set" in r.stderr + r.stdout, r.stderr
