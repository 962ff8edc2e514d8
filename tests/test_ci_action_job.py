"""The CI job that proves the action on GitHub's Ubuntu images (.github/workflows/ci.yml `action`, issue 43, item 1),
run here as far as this machine allows: no GitHub, no AppArmor. Its steps and the action's run for real
(tests/fakes/actions.py), with the real agent-run and the real bubblewrap, on a host whose `sudo`, `apparmor_parser`,
`sysctl` and `bwrap` are stand-ins that record their calls, `bwrap` refusing user namespaces until the profile is
loaded, as Ubuntu 24.04's does (tests/fakes/ubuntu_host.py). The hosted run itself is unverified here
(docs/sandbox.md). The action's sandbox set-up is also run alone on the other hosts: 22.04, an AppArmor parser that
refuses the profile, no passwordless sudo."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import agent_run_argv
from tests.fakes.actions import Runner
from tests.fakes.ubuntu_host import Host
from tests.fakes.zygote import Zygote
from tests.fakes.zygote_shim import install
from tests.test_workflows import ACTION, ROOT, action_step, load, run_step

CI = ROOT / ".github" / "workflows" / "ci.yml"
# The action's sudo_ asks `sudo -n true` before each command; apparmor_parser records its own call too.
PROFILE = ["sudo -n true", "sudo -n tee /etc/apparmor.d/agent-run-bwrap", "sudo -n true",
           "sudo -n apparmor_parser -r /etc/apparmor.d/agent-run-bwrap",
           "apparmor_parser -r /etc/apparmor.d/agent-run-bwrap"]


@pytest.fixture
def servers(tmp_path) -> Iterator[Path]:
    """Where the steps' detached model servers leave their pids; each is stopped after the test."""
    pids = tmp_path / "server-pids"
    pids.mkdir()
    yield pids
    for f in pids.iterdir():
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(f.read_text()), signal.SIGTERM)


def venv(root: Path, zygote: Zygote | None) -> Path:
    """agent-run's venv as the action's cache would restore it: its agent-run (forked from the zygote) and python."""
    bin_dir = root / "agent-run-venv" / "bin"
    install(zygote, bin_dir, agent_run_argv()[0])  # bin/python beside it
    return bin_dir.parent


def checkout(ws: Path) -> None:
    """This repository as the job checks it out: what the steps read, the rest linked (never written)."""
    ws.mkdir()
    for name in ("action.yml", "constraints.txt"):
        shutil.copy(ROOT / name, ws / name)
    for name in ("tests", "runner", "policies", "pyproject.toml", "README.md"):
        (ws / name).symlink_to(ROOT / name)


def test_the_action_job_runs_with_the_sandbox_required(tmp_path, agent_run_zygote, servers):
    host = Host(tmp_path, "24.04")
    ws, temp = tmp_path / "ws", tmp_path / "runner-temp"
    checkout(ws)
    temp.mkdir()
    venv(temp, agent_run_zygote)
    env = {**os.environ, "PATH": host.path(), "SERVE_OPENAI_PIDS": str(servers)}
    env = {k: v for k, v in env.items() if not k.startswith(("OPENAI_", "AGENT_RUN_", "GITHUB_"))}
    runner = Runner(ws, temp, env, {"event_name": "push", "run_id": "4242", "run_attempt": "1",
                                    "repository": "octo/agent-run", "token": "ghs_job"}, rewrite=host.rewrite)
    steps = runner.run_job(load(CI), "action", matrix={"os": "ubuntu-24.04"}, index=0, total=2)

    assert [(s.name, s.conclusion) for s in steps] == [
        ("actions/checkout@11d5960a326750d5838078e36cf38b85af677262", "success"),
        ("Start the scripted model server", "success"), ("Run the action from this checkout", "success"),
        ("The run succeeded, in the sandbox", "success"), ("Download the uploaded run directory", "success"),
        ("The artifact is the run directory", "success"), ("The sandbox holds", "success")], runner.log()
    # bwrap refused namespaces until the action loaded the profile: and only that, through sudo.
    assert host.calls() == PROFILE and host.userns_allowed
    assert (host.apparmor_d / "agent-run-bwrap").read_text() == (
        "abi <abi/4.0>,\ninclude <tunables/global>\nprofile agent-run-bwrap /usr/bin/bwrap flags=(unconfined) {\n"
        "  userns,\n}\n")
    uploaded = dict(runner.calls)["actions/upload-artifact"]
    assert uploaded["name"] == "agent-run-action-ubuntu-24.04-1" and uploaded["include-hidden-files"] is True
    assert not (temp / "outside" / "escaped").exists()


@pytest.mark.parametrize(("kind", "calls", "mode", "allowed"), [
    ("22.04", [], "required", True),  # no restriction: nothing to load, no sudo
    ("old-parser", [*PROFILE, "sudo -n true", "sudo -n sysctl -q -w kernel.apparmor_restrict_unprivileged_userns=0",
                    "sysctl -q -w kernel.apparmor_restrict_unprivileged_userns=0"], "required", True),
    ("no-sudo", ["sudo -n true", "sudo -n true"], "required", False),  # refused later by agent-run (exit 2)
])
def test_the_actions_sandbox_setup_on_other_hosts(tmp_path, agent_run_zygote, kind, calls, mode, allowed):
    host = Host(tmp_path, kind)
    bin_dir = venv(tmp_path, agent_run_zygote)
    (tmp_path / "ws").mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENT_RUN_", "GITHUB_"))}
    env |= {"PATH": host.path(), "VENV": str(bin_dir), "RUNNER_OS": "Linux", "INPUT_SANDBOX": "required",
            "FALLBACK": "false", "GITHUB_OUTPUT": str(tmp_path / "output")}
    proc, out = run_step(host.rewrite(action_step("sandbox")["run"]), env, tmp_path / "ws", tmp_path)
    assert proc.returncode == 0, out
    assert host.calls() == calls and host.userns_allowed is allowed
    assert f"mode={mode}\n" in (tmp_path / "output").read_text()
    assert ("sandbox: ACTIVE" in out) is allowed, out


def test_the_job_is_on_both_images_with_the_sandbox_required():
    job = load(CI)["jobs"]["action"]
    assert job["strategy"]["matrix"]["os"] == ["ubuntu-24.04", "ubuntu-22.04"] and job["runs-on"] == "${{ matrix.os }}"
    agent = next(s for s in job["steps"] if s.get("uses") == "./")
    assert agent["with"]["sandbox"] == "required" and "api-key" in agent["with"]
    assert "secrets." not in CI.read_text(encoding="utf-8")  # the scripted server needs no secret
    assert load(ACTION)["inputs"]["sandbox-fallback"]["default"] == "false"
