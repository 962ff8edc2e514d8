"""Streamable HTTP against the scripted toolbox, and stdio against a server nobody here wrote (mcp-server-time)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from runner.mcp.client import McpCallError, McpServer, McpStartError
from runner.mcp.config import ServerConfig
from runner.mcp.tools import specs_for
from tests.fakes.wait import until
from tests.mcp.conftest import CALL_S, START_S, alive


def http(url: str, token: str = "x") -> ServerConfig:
    return ServerConfig(name="remote", transport="http", url=url, headers={"Authorization": f"Bearer {token}"})


def test_http_text_tool_with_header(http_toolbox: str, servers: list[McpServer]) -> None:
    server = McpServer(http(http_toolbox), start_timeout_s=START_S)
    servers.append(server)
    server.start()
    assert server.server_info == {"name": "toolbox", "version": "1.2.3"}
    assert "shout" in [t["name"] for t in server.tools]
    shouted = server.call("shout", {"text": "over http"}, timeout_s=CALL_S)
    assert shouted.content == [{"type": "text", "text": "OVER HTTP"}]
    assert server.call("broken", {}, timeout_s=CALL_S).is_error is True
    with pytest.raises(McpCallError) as info:
        server.call("hang", {}, timeout_s=0.5)
    assert info.value.kind == "timeout"
    assert server.call("shout", {"text": "again"}, timeout_s=CALL_S).content[0]["text"] == "AGAIN"


def test_http_wrong_header_is_a_start_error(http_toolbox: str) -> None:
    with pytest.raises(McpStartError) as info:
        McpServer(http(http_toolbox, token="wrong"), start_timeout_s=START_S).start()
    assert "401" in info.value.message and info.value.kind == "rpc_error"  # the 401 ended the start, not a timeout
    assert "wrong" not in str(info.value)  # the header value is a secret


def test_http_unreachable() -> None:
    with pytest.raises(McpStartError) as info:
        McpServer(http("http://127.0.0.1:9/mcp"), start_timeout_s=START_S).start()
    assert info.value.kind == "crashed" and "127.0.0.1:9" in info.value.message


def test_http_server_dies_mid_session(http_toolbox: str, servers: list[McpServer]) -> None:
    server = McpServer(http(http_toolbox), start_timeout_s=START_S)
    servers.append(server)
    server.start()
    with pytest.raises(McpCallError) as info:
        server.call("die", {}, timeout_s=CALL_S)  # os._exit in the HTTP server process
    assert info.value.kind == "crashed"
    with pytest.raises(McpCallError) as again:
        server.call("shout", {"text": "x"}, timeout_s=CALL_S)
    assert again.value.kind == "crashed"  # at once, not at the call's timeout


def _time_server_argv() -> list[str]:
    script = shutil.which("mcp-server-time", path=str(Path(sys.executable).parent))
    return [script] if script else [sys.executable, "-m", "mcp_server_time"]


def test_mcp_server_time_from_pypi(tmp_path: Path, servers: list[McpServer]) -> None:
    pytest.importorskip("mcp_server_time", reason="mcp-server-time (the dev extra) is not installed")
    argv = [*_time_server_argv(), "--local-timezone", "UTC"]
    config = ServerConfig(name="time", transport="stdio", command=argv[0], args=tuple(argv[1:]))
    server = McpServer(config, log_path=tmp_path / "mcp" / "time.log", start_timeout_s=START_S)
    servers.append(server)
    server.start()
    assert server.server_info["name"] == "mcp-time"
    names = sorted(t["name"] for t in server.tools)
    assert names == ["convert_time", "get_current_time"]
    specs = specs_for([server])
    assert [s["function"]["name"] for s in specs] == ["mcp__time__convert_time", "mcp__time__get_current_time"]
    assert specs[1]["function"]["parameters"]["type"] == "object"
    result = server.call("get_current_time", {"timezone": "Europe/Paris"}, timeout_s=CALL_S)
    assert result.is_error is False
    text = result.content[0]["text"]
    assert "Europe/Paris" in text and "datetime" in text
    pid = server.pid
    assert pid is not None and alive(pid)
    server.close()
    until(lambda: not alive(pid), "the closed server to be gone")
