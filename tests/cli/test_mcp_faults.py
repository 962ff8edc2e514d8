"""MCP servers on a bad day, through the real CLI (issue 26): a server's log noise stays bounded, a server runs in
its configured cwd inside the sandbox, a server dropped at start leaves no process behind, an HTTP server's policy
target carries no expanded secret, and the sandbox is built from the run's environment (--env-file included)."""

from __future__ import annotations

import json
import os
import random
import socket
import sys
from pathlib import Path

import pytest

from tests.fakes.openai_server import reply
from tests.fakes.procs import wait_gone

SERVERS = Path(__file__).parents[1] / "mcp" / "servers"
MiB = 1024 * 1024

pytestmark = pytest.mark.usefixtures("sandbox_available")


def plain(*args: str, **more: object) -> dict:
    return {"command": sys.executable, "args": [str(SERVERS / "plain.py"), *args],
            "sandbox": {"readOnly": [str(SERVERS)]}, **more}


def write_config(workspace: Path, servers: dict) -> str:
    (workspace / "mcp.json").write_text(json.dumps({"mcpServers": servers}))
    return "mcp.json"


def test_a_servers_log_noise_is_bounded_and_the_run_works(fake, workspace, agent_run):
    config = write_config(workspace, {"noisy": plain("--stderr-mb", "20", "--junk", "200000")})
    fake.add(reply(calls=[("mcp__noisy__cwd", {})]), reply("done"))
    r = agent_run("--mcp-config", config, "--approve", "mcp:mcp:noisy/*", "task.md")
    assert r.code == 0, r.stderr
    assert r.summary["status"] == "success"
    result = next(e for e in r.of_type("tool_result") if e["tool"] == "mcp__noisy__cwd")
    assert result["ok"], result
    log = r.run_dir / "mcp" / "noisy.log"
    size = log.stat().st_size
    assert 1000 * 1024 < size <= MiB  # the first and the last 512 KiB, and the marker between
    text = log.read_bytes().decode()
    dropped = [ln for ln in text.splitlines() if ln.startswith("[agent-run: ") and ln.endswith(" bytes dropped]")]
    assert len(dropped) == 1
    assert int(dropped[0].split()[1]) > 19 * MiB
    # The junk lines: the first 10 kept, the rest counted in the log's end line.
    assert "junk line 9," in text and "junk line 10," not in text
    assert "200000 stdout lines that are not JSON-RPC" in text
    assert text.rstrip("\n").splitlines()[-1].startswith("[agent-run]")  # the end of the log is the last written


def test_a_stdio_server_runs_in_its_configured_cwd_inside_the_sandbox(fake, workspace, agent_run):
    (workspace / "sub").mkdir()
    config = write_config(workspace, {"p": plain(cwd="sub")})
    fake.add(reply(calls=[("mcp__p__cwd", {})]), reply("done"))
    r = agent_run("--mcp-config", config, "--approve", "mcp:mcp:p/*", "task.md")
    assert r.code == 0, r.stderr
    assert r.summary["sandbox"]["active"]
    result = next(e for e in r.of_type("tool_result") if e["tool"] == "mcp__p__cwd")
    assert result["content"].strip() == str(workspace / "sub")


def test_a_cwd_the_sandbox_does_not_show_is_refused(fake, workspace, agent_run, tmp_path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    config = write_config(workspace, {"p": plain(cwd=str(outside))})
    fake.add(reply("no server, fine"))
    r = agent_run("--mcp-config", config, "task.md")
    assert r.code == 0, r.stderr
    failed = r.of_type("mcp_server_failed")
    assert [(e["server"], e["kind"]) for e in failed] == [("p", "refused")]
    assert "cwd" in failed[0]["message"] and "readOnly" in failed[0]["message"]
    assert r.summary["mcp"]["p"]["status"] == "failed"


def _survivors(token: str) -> list[int]:
    """Processes whose command line holds `token` (a unique `sleep` argument), in any pid namespace."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if token.encode() in argv and not wait_gone(int(entry.name), grace_s=0):
            found.append(int(entry.name))
    return found


def test_a_server_dropped_at_start_leaves_no_process(fake, workspace, agent_run):
    token = f"{random.randint(10_000, 99_999)}.{os.getpid()}"
    config = write_config(workspace, {"broken": plain("--fail-tools", "--child", token)})
    fake.add(reply("no server, fine"))
    r = agent_run("--mcp-config", config, "task.md")
    assert r.code == 0, r.stderr
    failed = r.of_type("mcp_server_failed")
    assert [(e["server"], e["phase"]) for e in failed] == [("broken", "start")]
    assert r.summary["mcp"]["broken"]["status"] == "failed"
    assert _survivors(token) == []


def test_an_http_servers_policy_target_holds_no_expanded_secret(fake, workspace, agent_run, tmp_path):
    with socket.socket() as s:  # a free port nobody listens on: the start fails after the policy allowed it
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    secret = "q7Zr1xVw9pLmK3sT"
    base = f"http://127.0.0.1:{port}/mcp"
    config = write_config(workspace, {"docs": {"type": "http", "url": base + "?key=${DOCS_KEY}&v=1",
                                               "headers": {"X-Key": "${DOCS_KEY}"}}})
    (tmp_path / "job.env").write_text(f"DOCS_KEY={secret}\n")
    (workspace / "p.jsonc").write_text(json.dumps({"extends": "default", "permission": {"rules": [
        {"domain": "mcp", "pattern": f"url:{base}", "decision": "allow"},
        {"domain": "network", "pattern": f"net:127.0.0.1:{port}", "decision": "allow"}]}}))
    fake.add(reply("no server, fine"))
    r = agent_run("--env-file", str(tmp_path / "job.env"), "--policy", "p.jsonc", "--mcp-config", config, "task.md")
    assert r.code == 0, r.stderr
    decision = next(e for e in r.of_type("permission_decision") if e["tool"] == "mcp__docs")
    assert [(t["target"], t["decision"]) for t in decision["targets"]] == [
        (f"url:{base}", "allow"), (f"net:127.0.0.1:{port}", "allow")]
    assert decision["decision"] == "allow"
    assert r.summary["mcp"]["docs"]["kind"] == "crashed"  # allowed, then nothing answered
    for path in r.run_dir.rglob("*"):
        if path.is_file():
            assert secret not in path.read_text(errors="replace"), path
    assert secret not in r.stderr and secret not in r.stdout


def test_an_http_server_allowed_by_its_url_but_not_on_the_network_is_refused(fake, workspace, agent_run):
    """Issue 42, item 10: an HTTP server is decided on its URL and on the network target it connects to, as a
    web_fetch is; the default policy allows no host, so a url: rule alone does not reach it."""
    port = _free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    config = write_config(workspace, {"docs": {"type": "http", "url": url}})
    (workspace / "p.jsonc").write_text(json.dumps({"extends": "default", "permission": {"rules": [
        {"domain": "mcp", "pattern": f"url:{url}", "decision": "allow"}]}}))
    fake.add(reply("no server, fine"))
    r = agent_run("--policy", "p.jsonc", "--mcp-config", config, "task.md")
    assert r.code == 3, r.stderr  # a denial, as a refused URL is
    decision = next(e for e in r.of_type("permission_decision") if e["tool"] == "mcp__docs")
    assert [(t["target"], t["decision"]) for t in decision["targets"]] == [
        (f"url:{url}", "allow"), (f"net:127.0.0.1:{port}", "ask")]
    assert (decision["policy_decision"], decision["decision"]) == ("ask", "deny")
    assert decision["approve"] == [f"network:net:127.0.0.1:{port}"]  # what a rerun approves: the host alone
    failed = r.of_type("mcp_server_failed")
    assert [(e["server"], e["kind"]) for e in failed] == [("docs", "refused")]
    assert f'"pattern": "net:127.0.0.1:{port}"' in failed[0]["message"]


def _free_port() -> int:
    """A loopback port nobody listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_sandbox_is_built_from_the_runs_environment(fake, workspace, agent_run, tmp_path):
    # A tree the policy lets commands read, holding a credential file that only the --env-file names (NETRC):
    # the run's environment says it is a secret, so the sandbox hides it, as it would for the job's own NETRC.
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "readme").write_text("visible\n")
    (shared / "netrc").write_text("machine example.com password hunter2-netrc\n")
    (tmp_path / "job.env").write_text(f"NETRC={shared / 'netrc'}\n")
    (workspace / "p.jsonc").write_text(json.dumps({"extends": "default", "permission": {"rules": [
        {"domain": "read", "pattern": f"fs:{shared}/**", "decision": "allow"},
        {"domain": "bash", "pattern": "cat *", "decision": "allow"}]}}))
    fake.add(reply(calls=[("bash", {"command": f"cat {shared}/readme {shared}/netrc"})]), reply("done"))
    r = agent_run("--env-file", str(tmp_path / "job.env"), "--policy", "p.jsonc", "task.md")
    assert r.code == 0, r.stderr
    assert r.summary["sandbox"]["active"]
    result = next(e for e in r.of_type("tool_result") if e["tool"] == "bash")
    assert "visible" in result["content"] and "hunter2" not in result["content"]



def test_a_server_dropped_mid_run_is_closed_and_its_log_finished(fake, workspace, agent_run):
    config = write_config(workspace, {"p": plain("--stderr-mb", "2")})
    fake.add(reply(calls=[("mcp__p__die", {})]), reply("went on without it"))
    r = agent_run("--mcp-config", config, "--approve", "mcp:mcp:p/*", "task.md")
    assert r.code == 0, r.stderr
    assert [(e["server"], e["phase"], e["kind"]) for e in r.of_type("mcp_server_failed")] == [("p", "call", "crashed")]
    assert r.summary["mcp"]["p"]["status"] == "failed"
    text = (r.run_dir / "mcp" / "p.log").read_text()
    # Closed, not only killed: the log got its marker and its tail, the server's last words included.
    assert "bytes dropped]" in text and "plain: dying on purpose" in text
