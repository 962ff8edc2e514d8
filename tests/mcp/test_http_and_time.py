"""Streamable HTTP against the scripted toolbox, and stdio against a server nobody here wrote (mcp-server-time)."""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

import pytest

from runner.mcp.client import McpCallError, McpServer, McpStartError
from runner.mcp.config import ServerConfig
from runner.mcp.tools import specs_for
from tests.mcp.conftest import alive


def http(url: str, token: str = "x") -> ServerConfig:
    return ServerConfig(name="remote", transport="http", url=url, headers={"Authorization": f"Bearer {token}"})


def test_http_text_tool_with_header(http_toolbox: str, servers: list[McpServer]) -> None:
    server = McpServer(http(http_toolbox), start_timeout_s=10)
    servers.append(server)
    server.start()
    assert server.server_info == {"name": "toolbox", "version": "1.2.3"}
    assert "shout" in [t["name"] for t in server.tools]
    assert server.call("shout", {"text": "over http"}, timeout_s=5).content == [{"type": "text", "text": "OVER HTTP"}]
    assert server.call("broken", {}, timeout_s=5).is_error is True
    with pytest.raises(McpCallError) as info:
        server.call("hang", {}, timeout_s=0.5)
    assert info.value.kind == "timeout"
    assert server.call("shout", {"text": "again"}, timeout_s=5).content[0]["text"] == "AGAIN"


def test_http_wrong_header_is_a_start_error(http_toolbox: str) -> None:
    started = time.monotonic()
    with pytest.raises(McpStartError) as info:
        McpServer(http(http_toolbox, token="wrong"), start_timeout_s=10).start()
    assert "401" in info.value.message and info.value.kind == "rpc_error"
    assert "wrong" not in str(info.value)  # the header value is a secret
    assert time.monotonic() - started < 5


def test_http_unreachable() -> None:
    with pytest.raises(McpStartError) as info:
        McpServer(http("http://127.0.0.1:9/mcp"), start_timeout_s=5).start()
    assert info.value.kind == "crashed" and "127.0.0.1:9" in info.value.message


def test_http_server_dies_mid_session(http_toolbox: str, servers: list[McpServer]) -> None:
    server = McpServer(http(http_toolbox), start_timeout_s=10)
    servers.append(server)
    server.start()
    with pytest.raises(McpCallError) as info:
        server.call("die", {}, timeout_s=5)  # os._exit in the HTTP server process
    assert info.value.kind == "crashed"
    started = time.monotonic()
    with pytest.raises(McpCallError) as again:
        server.call("shout", {"text": "x"}, timeout_s=5)
    assert again.value.kind == "crashed" and time.monotonic() - started < 1


def _time_server_argv() -> list[str]:
    script = shutil.which("mcp-server-time", path=str(Path(sys.executable).parent))
    return [script] if script else [sys.executable, "-m", "mcp_server_time"]


def test_mcp_server_time_from_pypi(tmp_path: Path, servers: list[McpServer]) -> None:
    pytest.importorskip("mcp_server_time", reason="mcp-server-time (the dev extra) is not installed")
    argv = [*_time_server_argv(), "--local-timezone", "UTC"]
    config = ServerConfig(name="time", transport="stdio", command=argv[0], args=tuple(argv[1:]))
    server = McpServer(config, log_path=tmp_path / "mcp" / "time.log", start_timeout_s=20)
    servers.append(server)
    server.start()
    assert server.server_info["name"] == "mcp-time"
    names = sorted(t["name"] for t in server.tools)
    assert names == ["convert_time", "get_current_time"]
    specs = specs_for([server])
    assert [s["function"]["name"] for s in specs] == ["mcp__time__convert_time", "mcp__time__get_current_time"]
    assert specs[1]["function"]["parameters"]["type"] == "object"
    result = server.call("get_current_time", {"timezone": "Europe/Paris"}, timeout_s=10)
    assert result.is_error is False
    text = result.content[0]["text"]
    assert "Europe/Paris" in text and "datetime" in text
    pid = server.pid
    assert pid is not None and alive(pid)
    server.close()
    assert not alive(pid)
