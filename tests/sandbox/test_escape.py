"""Escape attempts through the real CLI, with the sandbox on: an allowed command running
agent-written code (a conftest.py under the shipped `ci` policy's `python -m pytest`) tries
every way out the containment issue names. Each attempt is made for real; results come back
through a file in the workspace, and the host is checked directly as well."""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
from pathlib import Path

import pytest

from tests.fakes.openai_server import reply

pytestmark = pytest.mark.usefixtures("sandbox_available")

SYSTEM_FILE = f"/etc/agent-run-escape-test-{os.getpid()}.txt"  # never written by the control test

PROBE = r'''
import json, os, socket, pathlib
out = {}
def attempt(name, fn):
    try:
        fn()
        out[name] = "ok"
    except Exception as exc:
        out[name] = f"{type(exc).__name__}: {exc}"
def write(path):
    return lambda: pathlib.Path(path).write_text("pwned")
def read(path):
    return lambda: out.__setitem__(name_of(path), pathlib.Path(path).read_text())
def name_of(p):
    return "content:" + p
attempt("write_outside", write(OUTSIDE))
attempt("write_home", write(REAL_HOME + "/pwned.txt"))
attempt("write_etc", write(SYSTEM_FILE))
attempt("write_git_config", write(".git/config"))
attempt("write_git_hook", write(".git/hooks/pre-commit"))
attempt("write_git_commondir", write(".git/commondir"))
attempt("write_runs_dir", write(".agent-run/runs/pwned.txt"))
attempt("read_ssh_key", read(REAL_HOME + "/.ssh/id_ed25519"))
def environs():
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if b"SECRET-KEY-MARKER" in open(f"/proc/{entry}/environ", "rb").read():
                    found.append(entry)
            except OSError:
                pass
    out["environ_with_key"] = found
    out["ppid_environ_exists"] = os.path.exists(f"/proc/{os.getppid()}/environ") and os.getppid() > 1
attempt("scan_environ", environs)
attempt("tcp_loopback", lambda: socket.create_connection(("127.0.0.1", TCP_PORT), timeout=3).close())
out["home"] = os.environ.get("HOME")
out["has_api_key"] = any("SECRET-KEY-MARKER" in v for v in os.environ.values())
pathlib.Path("probe.json").write_text(json.dumps(out))
'''


class Listener:
    """A TCP server on loopback that counts the connections it accepts."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        threading.Thread(target=self._loop, daemon=True).start()

    def _loop(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            conn.close()


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A stand-in for the job's real home, with a secret in it."""
    h = tmp_path / "home"
    (h / ".ssh").mkdir(parents=True)
    (h / ".ssh" / "id_ed25519").write_text("PRIVATE KEY\n")
    return h


def _git_init(ws: Path) -> None:
    import subprocess

    subprocess.run(["git", "init", "-q"], cwd=ws, check=True)
    (ws / ".git" / "hooks").mkdir(exist_ok=True)


def test_pytest_running_agent_written_conftest_is_contained(fake, workspace, agent_run, tmp_path, home):
    _git_init(workspace)
    outside = tmp_path / "outside.txt"
    listener = Listener()
    code = PROBE.replace("OUTSIDE", repr(str(outside))).replace("REAL_HOME", repr(str(home))).replace(
        "TCP_PORT", str(listener.port)).replace("SYSTEM_FILE", repr(SYSTEM_FILE))
    conftest = code + "\ndef pytest_collection_modifyitems(items):\n    pass\n"
    (workspace / "test_x.py").write_text("def test_ok():\n    assert True\n")
    fake.add(reply(calls=[("write", {"path": "conftest.py", "content": conftest})]),
             reply(calls=[("bash", {"command": "python -m pytest -q -p no:cacheprovider"})]),
             reply("done"))
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    r = agent_run("--policy", "ci", "--sandbox", "required", "task.md",
                  env={"HOME": str(home), "PATH": path, "OPENAI_API_KEY": "sk-SECRET-KEY-MARKER"})
    assert r.code == 0, r.stderr
    results = r.of_type("tool_result")
    assert results[1]["ok"], results[1]["content"]
    probe = json.loads((workspace / "probe.json").read_text())
    # write_outside may "succeed" into the sandbox's private /tmp: the host check below is what counts.
    for name in ("write_etc", "write_home", "write_git_config", "write_git_hook", "write_git_commondir",
                 "write_runs_dir", "read_ssh_key", "tcp_loopback"):
        assert probe[name] != "ok", (name, probe[name])
    assert "content:" + str(home / ".ssh/id_ed25519") not in probe
    assert probe["environ_with_key"] == [] and probe["ppid_environ_exists"] is False
    assert probe["has_api_key"] is False and probe["home"] != str(home)
    # and on the host, whatever the probe believed:
    assert not outside.exists() and not (home / "pwned.txt").exists() and not Path(SYSTEM_FILE).exists()
    assert "pwned" not in (workspace / ".git" / "config").read_text()
    assert not (workspace / ".git" / "hooks" / "pre-commit").exists()
    assert not (workspace / ".git" / "commondir").exists()
    assert not (r.runs_dir / "pwned.txt").exists()
    assert listener.accepted == 0
    started = r.of_type("run_started")[0]["sandbox"]
    assert started == {"mode": "required", "active": True, "mechanism": "bwrap", "network": "none", "reason": None}
    assert r.summary["sandbox"] == started


def test_the_same_probe_escapes_without_the_sandbox(fake, workspace, agent_run, tmp_path, home):
    """The control: with --sandbox off the very same conftest gets out, so the test above tests something."""
    _git_init(workspace)
    outside = tmp_path / "outside.txt"
    listener = Listener()
    code = PROBE.replace("OUTSIDE", repr(str(outside))).replace("REAL_HOME", repr(str(home))).replace(
        "TCP_PORT", str(listener.port)).replace("SYSTEM_FILE", repr(str(tmp_path / "stand-in-for-etc.txt")))
    (workspace / "test_x.py").write_text("def test_ok():\n    assert True\n")
    fake.add(reply(calls=[("write", {"path": "conftest.py", "content": code})]),
             reply(calls=[("bash", {"command": "python -m pytest -q -p no:cacheprovider"})]),
             reply("done"))
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    r = agent_run("--policy", "ci", "--sandbox", "off", "task.md", env={"HOME": str(home), "PATH": path})
    assert r.code == 0, r.stderr
    probe = json.loads((workspace / "probe.json").read_text())
    assert probe["write_outside"] == "ok" and outside.exists()
    assert probe["write_git_config"] == "ok" and probe["tcp_loopback"] == "ok"
    assert r.summary["sandbox"]["active"] is False and r.summary["sandbox"]["reason"] == "sandbox.mode is off"
