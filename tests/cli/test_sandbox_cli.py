"""`--sandbox`, `agent-run sandbox check|run`, and a machine without a sandbox, through the real CLI."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.conftest import agent_run_argv, clean_env
from tests.fakes.openai_server import reply
from tests.fakes.zygote import Zygote, run

NO_BWRAP = {"AGENT_RUN_BWRAP": "/nonexistent/bwrap"}  # the trusted override: as on a machine without it


def _cli(*args: str, env: dict[str, str] | None = None, cwd=None, zygote: Zygote | None = None,
         ) -> subprocess.CompletedProcess[str]:
    """`agent-run ARGS`, forked from `zygote` when given and it serves (a sandbox check imports ~2 s of CPU)."""
    return run(zygote, [*agent_run_argv(), *args], capture_output=True, text=True, env=clean_env(**(env or {})),
               cwd=cwd, timeout=60, stdin=subprocess.DEVNULL)


@pytest.mark.usefixtures("sandbox_available")
def test_check_reports_what_a_policy_gets(workspace, agent_run_zygote):
    done = _cli("sandbox", "check", "--policy", "ci", "--workspace", str(workspace), "--json", zygote=agent_run_zygote)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["machine"]["available"] is True and report["machine"]["mechanism"] == "bwrap"
    assert report["sandbox"] == {"mode": "auto", "active": True, "mechanism": "bwrap", "network": "none",
                                 "reason": None}
    mounts = {m["path"]: m["kind"] for m in report["mounts"]}
    assert mounts[str(workspace)] == "rw" and mounts["/usr"] == "ro"
    text = _cli("sandbox", "check", "--policy", "full-access", "--workspace", str(workspace), zygote=agent_run_zygote)
    assert text.returncode == 0 and "NOT ACTIVE, mode off" in text.stdout


def test_check_exits_2_when_required_cannot_be_met(workspace, agent_run_zygote):
    done = _cli("sandbox", "check", "--sandbox", "required", "--workspace", str(workspace), "--json", env=NO_BWRAP,
                zygote=agent_run_zygote)
    assert done.returncode == 2
    report = json.loads(done.stdout)
    assert report["sandbox"]["active"] is False and "not installed" in report["sandbox"]["reason"]
    auto = _cli("sandbox", "check", "--workspace", str(workspace), env=NO_BWRAP, zygote=agent_run_zygote)
    assert auto.returncode == 0


@pytest.mark.usefixtures("sandbox_available")
def test_sandbox_run_tries_a_command_by_hand(workspace, tmp_path, agent_run_zygote):
    outside = tmp_path / "outside.txt"
    done = _cli("sandbox", "run", "--workspace", str(workspace), "--", "bash", "-c",
                f"echo in > inside.txt; echo out > {outside} 2>/dev/null; ls /proc | grep -c '^[0-9]'; exit 7",
                zygote=agent_run_zygote)
    assert done.returncode == 7, done.stderr
    assert (workspace / "inside.txt").read_text() == "in\n" and not outside.exists()
    assert int(done.stdout.strip()) <= 4  # only the sandbox's own processes are visible


def test_required_without_a_sandbox_refuses_to_run(fake, workspace, agent_run):
    fake.add(reply("never asked"))
    r = agent_run("--sandbox", "required", "task.md", env=NO_BWRAP)
    assert r.code == 2 and "sandbox required but unavailable" in r.summary["reason"]
    assert fake.requests == []
    r = agent_run("task.md", env={**NO_BWRAP, "AGENT_RUN_SANDBOX": "required"})
    assert r.code == 2, "AGENT_RUN_SANDBOX (the job environment) is honoured"


def test_auto_without_a_sandbox_says_so_everywhere(fake, workspace, agent_run):
    fake.add(reply(calls=[("bash", {"command": "echo hi"})]), reply("done"))
    r = agent_run("--approve", "bash:shell:echo *", "task.md", env=NO_BWRAP)
    assert r.code == 0, r.stderr
    assert "WARNING: running WITHOUT a sandbox" in r.stderr
    expected = {"mode": "auto", "active": False, "mechanism": None, "network": "all",
                "reason": "bubblewrap (bwrap) is not installed"}
    assert r.of_type("run_started")[0]["sandbox"] == expected and r.summary["sandbox"] == expected


def test_a_workspace_env_file_cannot_turn_the_sandbox_off(fake, workspace, agent_run):
    (workspace / ".env").write_text("AGENT_RUN_SANDBOX=off\n")
    fake.add(reply("done"))
    r = agent_run("task.md")
    assert r.summary["sandbox"]["mode"] == "auto"


def test_policy_sandbox_mode_and_flag_precedence(fake, workspace, agent_run, tmp_path, agent_run_zygote):
    policy = tmp_path / "p.jsonc"
    policy.write_text('{"extends": "default", "sandbox": {"mode": "off"}}')
    fake.add(reply("done"), reply("done"))
    assert agent_run("--policy", str(policy), "task.md").summary["sandbox"]["mode"] == "off"
    r = agent_run("--policy", str(policy), "--sandbox", "auto", "task.md", env={"AGENT_RUN_SANDBOX": "off"})
    assert r.summary["sandbox"]["mode"] == "auto"
    bad = tmp_path / "bad.jsonc"
    bad.write_text('{\n  "sandbox": {"network": {"allow": ["a/b"]}}\n}')
    done = _cli("policy", "check", str(bad), zygote=agent_run_zygote)
    assert done.returncode == 2 and f"{bad}:2:" in done.stdout
