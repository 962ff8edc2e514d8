"""Escape attempts through the real CLI, with the sandbox on: an allowed command running
agent-written code (a conftest.py under the shipped `ci` policy's `python -m pytest`) tries
every way out the containment issue names. Each attempt is made for real; results come back
through a file in the workspace, and the host is checked directly as well."""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path

import pytest

from tests.fakes.listener import Listener
from tests.fakes.openai_server import reply
from tests.fakes.wait import HANG_S, until

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
    subprocess.run(["git", "add", "task.md"], cwd=ws, check=True)
    subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "start"], cwd=ws, check=True)
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
    # The runner's own git ran sandboxed too, and still saw what the agent changed.
    assert {"conftest.py", "probe.json"} <= set(r.summary["changed_files"])
    assert "test_x.py" not in r.summary["changed_files"]  # there before the run: not the agent's
    assert "+def pytest_collection_modifyitems" in (r.run_dir / "changes.patch").read_text()


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


class HTTPTarget:
    """A loopback HTTP server that counts the requests it answers."""

    def __init__(self) -> None:
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        target = self
        self.hits = 0

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                target.hits += 1
                body = b"hello from the allowed host\n"
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


FETCH = ("python3 -c \"import sys, urllib.request as u; "
         "print(u.urlopen('http://127.0.0.1:%d/x', timeout=10).read().decode())\"")
DIRECT = "python3 -c \"import socket; socket.create_connection(('127.0.0.1', %d), timeout=3)\""


def test_network_allow_list_goes_through_the_proxy(fake, workspace, agent_run, tmp_path):
    allowed, denied = HTTPTarget(), HTTPTarget()
    policy = tmp_path / "net.jsonc"
    policy.write_text(json.dumps({"extends": "ci", "sandbox": {"mode": "required", "network": {
        "allow": [f"127.0.0.1:{allowed.port}"]}}}))
    fake.add(reply(calls=[("bash", {"command": FETCH % allowed.port})]),
             reply(calls=[("bash", {"command": DIRECT % allowed.port})]),
             reply(calls=[("bash", {"command": FETCH % denied.port})]),
             reply("done"))
    r = agent_run("--policy", str(policy), "--approve", "bash:shell:python3 *", "task.md")
    results = r.of_type("tool_result")
    assert results[0]["ok"] and "hello from the allowed host" in results[0]["content"], results[0]
    assert not results[1]["ok"], "a direct connection must not leave the sandbox's network namespace"
    assert not results[2]["ok"] and "HTTP Error 403: Forbidden" in results[2]["content"]
    assert allowed.hits == 1 and denied.hits == 0
    requests = [(e["host"], e["port"], e["decision"]) for e in r.of_type("network_request")]
    assert requests == [("127.0.0.1", allowed.port, "allow"), ("127.0.0.1", denied.port, "deny")]
    assert r.of_type("network_request")[0]["rule"]["file"] == "sandbox.network"
    # A refused connection is a denial of the run, with the approval that would allow it.
    assert r.code == 3, r.stderr
    denial = r.summary["denials"][0]
    assert denial["domain"] == "network" and denial["target"] == f"net:127.0.0.1:{denied.port}"
    assert denial["approve"] == [f"network:net:127.0.0.1:{denied.port}"]
    assert r.summary["sandbox"]["network"] == {"allow": [f"127.0.0.1:{allowed.port}"]}


def _orphan(workspace: Path) -> tuple[str, str]:
    """A command that leaves a setsid grandchild beating into `beat` forever, and the name it runs under ($0 of
    its `sh -c`, unique to the test): what the host's /proc is searched for."""
    name = f"agent-run-orphan-{os.getpid()}-{workspace.parent.name}"
    loop = "while :; do date +%s%N > beat; sleep 0.05; done"
    return f"setsid sh -c '{loop}' {name} >/dev/null 2>&1 < /dev/null &", name


def _running(name: str) -> bool:
    """Whether a live process on the host has `name` as an argument (the sandbox's pids are not the host's)."""
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if name.encode() in argv:
                return True
    return False


def test_a_setsid_grandchild_dies_when_the_call_returns(fake, workspace, agent_run):
    orphan, name = _orphan(workspace)
    # The call returns once the grandchild has beaten (a wait on the file, not a sleep).
    fake.add(reply(calls=[("bash", {"command": orphan + " until [ -s beat ]; do sleep 0.05; done; echo started"})]),
             reply("done"))
    r = agent_run("--approve", "bash:shell:*", "--sandbox", "required", "task.md")
    assert r.code == 0, r.stderr
    assert (workspace / "beat").exists()
    until(lambda: not _running(name), "the setsid grandchild to be gone")


def test_interrupt_kills_a_setsid_grandchild_and_exits_143_fast(fake, workspace):
    import subprocess

    from tests.cli.test_replay_and_signals import _start, _wait_for_event

    # The tool's sleep outlasts every wait here: the run ends, and the grandchild goes, only by the kill.
    orphan, name = _orphan(workspace)
    fake.add(reply(calls=[("bash", {"command": orphan + " sleep 600"})]), reply("never"))
    proc = _start(fake, workspace, "--approve", "bash:shell:*", "--sandbox", "required", "task.md")
    run_dir = _wait_for_event(workspace, "tool_call")
    until(lambda: (workspace / "beat").exists(), "the grandchild's first beat")
    proc.send_signal(15)
    try:
        code = proc.wait(timeout=HANG_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise
    assert code == 143
    assert json.loads((run_dir / "summary.json").read_text())["status"] == "interrupted"
    until(lambda: not _running(name), "the setsid grandchild to be gone")


def test_a_tasks_check_runs_in_the_sandbox_too(fake, workspace, agent_run, home):
    secret = home / ".ssh" / "id_ed25519"
    # check_attempts 1: the check's first verdict decides (the control's failure goes back to no model)
    (workspace / "t.md").write_text(f"---\ncheck: test ! -e {secret} && test -w .\ncheck_attempts: 1\n---\nNothing to "
                                    "do.\n")
    fake.add(reply("nothing to do"), reply("nothing to do"))
    r = agent_run("--approve", "bash:shell:test *", "--sandbox", "required", "t.md", env={"HOME": str(home)})
    assert r.code == 0 and r.summary["check"]["ok"] is True, r.summary
    r = agent_run("--approve", "bash:shell:test *", "--sandbox", "off", "t.md", env={"HOME": str(home)})
    assert r.code == 1 and r.summary["check"]["ok"] is False  # the control: outside it, the key is there
