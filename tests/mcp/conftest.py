"""Fixtures for the MCP tests: real server processes (the scripted ones in servers/, and mcp-server-time)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from runner.mcp.client import McpServer
from runner.mcp.config import ServerConfig
from tests.fakes.wait import HANG_S, until

SERVERS = Path(__file__).parent / "servers"
# Timeouts for starts and calls that must succeed: they only stop a hang. A server starts in about a second
# (an interpreter importing the MCP SDK), several on a loaded machine; a call takes milliseconds.
START_S = 60
CALL_S = 30


def stdio_config(name: str, script: str, *args: str, env: dict[str, str] | None = None) -> ServerConfig:
    return ServerConfig(name=name, transport="stdio", command=sys.executable, args=(str(SERVERS / script), *args),
                        env=env or {})


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is dead for our purposes (its parent has not reaped it yet).
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


@pytest.fixture
def servers() -> Iterator[list[McpServer]]:
    """Started servers appended here are closed after the test, whatever happened."""
    started: list[McpServer] = []
    yield started
    for server in started:
        server.close()


@pytest.fixture
def toolbox(tmp_path: Path, servers: list[McpServer]) -> McpServer:
    server = McpServer(stdio_config("toolbox", "toolbox.py"), log_path=tmp_path / "mcp" / "toolbox.log",
                       start_timeout_s=START_S)
    servers.append(server)
    return server.start()


@pytest.fixture
def http_toolbox() -> Iterator[str]:
    """The toolbox over streamable HTTP on a free loopback port, token `x`; yields the endpoint URL."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, str(SERVERS / "toolbox.py"), "--http", str(port), "--token", "x"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    def listening() -> bool:
        if proc.poll() is not None:
            pytest.fail(f"the HTTP test server exited ({proc.returncode}) before it listened on {port}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=5).close()
            return True
        except OSError:
            return False

    try:
        until(listening, f"the HTTP test server to listen on {port}", timeout_s=START_S)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.kill()
        proc.wait(timeout=HANG_S)
