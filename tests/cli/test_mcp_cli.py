"""MCP servers as tools, through the real CLI: real servers from the registries (mcp-server-time from
PyPI; @modelcontextprotocol/server-everything from npm, over stdio and streamable HTTP) and scripted
ones for the failures, under the policy and inside the run's sandbox."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.fakes.openai_server import reply
from tests.fakes.wait import HANG_S, until

SERVERS = Path(__file__).parents[1] / "mcp" / "servers"
EVERYTHING = "@modelcontextprotocol/server-everything@2026.8.31"


def write_config(workspace: Path, servers: dict) -> str:
    (workspace / "mcp.json").write_text(json.dumps({"mcpServers": servers}))
    return "mcp.json"


def time_server() -> dict:
    return {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]}


def scripted(script: str, *args: str, **more) -> dict:
    return {"command": sys.executable, "args": [str(SERVERS / script), *args],
            "sandbox": {"readOnly": [str(SERVERS)]}, **more}


@pytest.fixture(scope="session")
def everything() -> Path:
    """server-everything from the npm registry, installed once per machine (a file lock keeps the
    parallel test workers from installing it four times)."""
    if shutil.which("npm") is None or shutil.which("node") is None:
        pytest.skip("npm/node are not installed: cannot install @modelcontextprotocol/server-everything")
    root = Path(tempfile.gettempdir()) / f"agent-run-npm-{os.getuid()}"
    root.mkdir(exist_ok=True)
    entry = root / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not entry.is_file():
            done = subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--silent", "--prefix", str(root),
                                   EVERYTHING], capture_output=True, text=True, timeout=600)
            if done.returncode != 0 or not entry.is_file():
                pytest.skip(f"cannot install {EVERYTHING} from the npm registry: {done.stderr.strip()[-300:]}")
    return entry


def test_an_allowed_call_returns_the_real_servers_result(fake, workspace, agent_run):
    config = write_config(workspace, {"time": time_server()})
    fake.add(reply(calls=[("mcp__time__get_current_time", {"timezone": "UTC"})]), reply("it is late"))
    r = agent_run("--mcp-config", config, "--approve", "mcp:mcp:time/get_current_time", "task.md")
    assert r.code == 0, r.stderr
    names = [t["function"]["name"] for t in fake.requests[0]["tools"]]
    assert names[-3:] == ["mcp__time__convert_time", "mcp__time__get_current_time", "task"]
    result = json.loads(fake.requests[1]["messages"][-1]["content"])
    assert result["timezone"] == "UTC" and result["datetime"].startswith(time.strftime("%Y-", time.gmtime()))
    started = r.of_type("mcp_server_started")
    assert [(e["server"], e["name"], e["tools"]) for e in started] == [("time", "mcp-time", 2)]
    assert started[0]["version"]
    decision = next(e for e in r.of_type("permission_decision") if e["tool"] == "mcp__time__get_current_time")
    assert decision["targets"][0]["target"] == "mcp:time/get_current_time"
    assert r.summary["mcp"]["time"]["status"] == "started"
    assert r.summary["mcp_configs"] == ["mcp.json"]
    assert (r.run_dir / "mcp" / "time.log").exists()


def test_a_denied_call_is_a_structured_deny_whose_replay_works(fake, workspace, agent_run):
    config = write_config(workspace, {"time": time_server()})
    fake.add(reply(calls=[("mcp__time__get_current_time", {"timezone": "UTC"})]), reply("cannot"))
    r = agent_run("--mcp-config", config, "task.md")  # default policy: mcp is `ask`
    assert r.code == 3, r.stderr
    error = json.loads(fake.requests[1]["messages"][-1]["content"])["error"]
    assert error["type"] == "ApprovalRequired" and error["target"] == "mcp:time/get_current_time"
    denial = r.summary["denials"][0]
    assert denial["approve"] == ["mcp:mcp:time/get_current_time"]
    replayed = agent_run(*denial["replay"].split()[1:])
    assert replayed.code == 0, replayed.stderr
    result = next(e for e in replayed.of_type("tool_result") if e["tool"] == "mcp__time__get_current_time")
    assert result["ok"] and '"timezone": "UTC"' in result["content"]
    fake.add(reply(calls=[("mcp__time__get_current_time", {"timezone": "UTC"})]), reply("denied"))
    strict = agent_run("--policy", "strict", "--mcp-config", config, "task.md")
    assert strict.code == 3
    assert json.loads(fake.requests[-1]["messages"][-1]["content"])["error"]["type"] == "ToolNotAllowed"


def test_a_server_dying_mid_run_is_an_error_and_the_run_goes_on(fake, workspace, agent_run):
    config = write_config(workspace, {"box": scripted("toolbox.py")})
    fake.add(reply(calls=[("mcp__box__die", {})]), reply(calls=[("mcp__box__shout", {"text": "hi"})]),
             reply("went on without it"))
    r = agent_run("--mcp-config", config, "--approve", "mcp:mcp:box/*", "task.md")
    assert r.code == 0, r.stderr
    died = json.loads(fake.requests[1]["messages"][-1]["content"])["error"]
    assert died["type"] == "McpError" and died["kind"] == "crashed" and died["server"] == "box"
    after = json.loads(fake.requests[2]["messages"][-1]["content"])["error"]
    assert after["kind"] == "unavailable"
    failed = r.of_type("mcp_server_failed")
    assert [(e["server"], e["phase"], e["kind"]) for e in failed] == [("box", "call", "crashed")]
    assert r.summary["mcp"]["box"]["status"] == "failed" and "goes on without it" in r.stderr


def test_a_tool_error_and_a_hanging_call_are_errors_the_model_can_act_on(fake, workspace, agent_run):
    config = write_config(workspace, {"box": scripted("toolbox.py")})
    fake.add(reply(calls=[("mcp__box__broken", {})]), reply(calls=[("mcp__box__hang", {})]),
             reply(calls=[("mcp__box__shout", {"text": "still here"})]), reply("done"))
    r = agent_run("--mcp-config", config, "--approve", "mcp:mcp:box/*", "task.md",
                  env={"AGENT_RUN_MCP_CALL_TIMEOUT_S": "1"})
    assert r.code == 0, r.stderr
    broken = json.loads(fake.requests[1]["messages"][-1]["content"])["error"]
    assert broken["type"] == "McpError" and broken["kind"] == "tool_error"
    hung = json.loads(fake.requests[2]["messages"][-1]["content"])["error"]
    assert hung["kind"] == "timeout"
    assert "STILL HERE" in fake.requests[3]["messages"][-1]["content"]


def test_servers_that_never_answer_or_cannot_start(fake, workspace, agent_run):
    config = write_config(workspace, {"silent": scripted("misbehaving.py", "silent"),
                                      "missing": {"command": "/nonexistent/mcp-server"}})
    fake.add(reply("no servers, fine"))
    r = agent_run("--mcp-config", config, "task.md", env={"AGENT_RUN_MCP_START_TIMEOUT_S": "2"})
    assert r.code == 0, r.stderr
    failed = {e["server"]: e for e in r.of_type("mcp_server_failed")}
    assert failed["silent"]["kind"] == "timeout" and failed["silent"]["phase"] == "start"
    assert failed["missing"]["kind"] in ("spawn", "crashed")
    assert "/nonexistent/mcp-server" in failed["missing"]["message"]
    assert "did not start" in r.stderr
    assert {k: v["status"] for k, v in r.summary["mcp"].items()} == {"silent": "failed", "missing": "failed"}
    assert not any(t["function"]["name"].startswith("mcp__") for t in fake.requests[0]["tools"])

    write_config(workspace, {"missing": {"command": "/nonexistent/mcp-server", "required": True}})
    required = agent_run("--mcp-config", config, "task.md")
    assert required.code == 2 and "is required and did not start" in required.stderr
    assert len(fake.requests) == 1  # no model request for the refused run


def test_a_broken_config_is_a_clear_error_before_anything_runs(fake, workspace, agent_run):
    (workspace / "mcp.json").write_text('{"mcpServers": {"x": {"command": 42}}}')
    r = agent_run("--mcp-config", "mcp.json", "task.md")
    assert r.code == 2 and "mcp.json:1:" in r.stderr and not fake.requests


def test_server_everything_over_stdio_and_streamable_http(fake, workspace, agent_run, everything):
    node = shutil.which("node")
    stdio = {"command": node, "args": [str(everything), "stdio"],
             "sandbox": {"readOnly": [str(everything.parents[3])]}}
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    http = subprocess.Popen([node, str(everything), "streamableHttp"], env={**os.environ, "PORT": str(port)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        def listening() -> bool:
            with socket.socket() as probe:
                return probe.connect_ex(("127.0.0.1", port)) == 0

        until(listening, f"server-everything to listen on {port}")
        url = f"http://127.0.0.1:{port}/mcp"
        config = write_config(workspace, {"ev": stdio, "web": {"type": "http", "url": url}})
        (workspace / "p.jsonc").write_text(json.dumps({"extends": "default", "permission": {"rules": [
            {"domain": "mcp", "pattern": f"url:{url}", "decision": "allow"},
            {"domain": "network", "pattern": f"net:127.0.0.1:{port}", "decision": "allow"},
            {"domain": "mcp", "pattern": "mcp:*/echo", "decision": "allow"}]}}))
        fake.add(reply(calls=[("mcp__ev__echo", {"message": "over stdio"}),
                              ("mcp__web__echo", {"message": "over http"})]), reply("both echoed"))
        r = agent_run("--policy", "p.jsonc", "--mcp-config", config, "task.md")
        assert r.code == 0, r.stderr
        started = next(e for e in r.of_type("permission_decision") if e["tool"] == "mcp__web")
        assert [(t["target"], t["decision"]) for t in started["targets"]] == [
            (f"url:{url}", "allow"), (f"net:127.0.0.1:{port}", "allow")]
        results = {e["tool"]: e for e in r.of_type("tool_result")}
        assert results["mcp__ev__echo"]["ok"] and "over stdio" in results["mcp__ev__echo"]["content"]
        assert results["mcp__web__echo"]["ok"] and "over http" in results["mcp__web__echo"]["content"]
        assert {e["server"]: e["transport"] for e in r.of_type("mcp_server_started")} == {"ev": "stdio",
                                                                                         "web": "http"}

        refused = agent_run("--mcp-config", config, "task.md")  # default policy: the URL is not allowed
        failed = {e["server"]: e for e in refused.of_type("mcp_server_failed")}
        assert failed["web"]["kind"] == "refused"
        denied = next(e for e in refused.of_type("permission_decision") if e["tool"] == "mcp__web")
        assert [(t["target"], t["decision"]) for t in denied["targets"]] == [
            (f"url:{url}", "ask"), (f"net:127.0.0.1:{port}", "ask")]
    finally:
        http.terminate()
        http.communicate(timeout=HANG_S)
