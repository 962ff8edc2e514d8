"""McpServer against real server processes over stdio: the scripted toolbox and the misbehaving ones."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from runner.mcp.client import McpCallError, McpServer, McpStartError
from runner.mcp.config import ServerConfig
from runner.mcp.tools import convert_result
from tests.fakes.wait import HANG_S, returns, until
from tests.mcp.conftest import CALL_S, START_S, alive, stdio_config

BASE = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent-home", "LANG": "C.UTF-8", "TMPDIR": "/tmp",
        "RUNNER_SECRET": "must-not-leak", "USER": "runner"}


def test_start_lists_tools_and_server_info(toolbox: McpServer, tmp_path: Path) -> None:
    assert toolbox.server_info == {"name": "toolbox", "version": "1.2.3"}
    names = [t["name"] for t in toolbox.tools]
    assert names == ["shout", "picture", "broken", "hang", "gather", "nap", "die", "environment", "git_status"]
    shout = toolbox.tools[0]
    assert shout["description"] == "Echo the text back, upper-cased."
    assert shout["inputSchema"]["properties"]["text"]["type"] == "string"
    log = (tmp_path / "mcp" / "toolbox.log").read_text()
    assert "starting toolbox: stdio" in log


def test_text_image_and_error_results(toolbox: McpServer, tmp_path: Path) -> None:
    result = toolbox.call("shout", {"text": "hello"}, timeout_s=CALL_S)
    assert result.content == [{"type": "text", "text": "HELLO"}] and result.is_error is False

    picture = toolbox.call("picture", {}, timeout_s=CALL_S)
    text, details = convert_result(picture, tmp_path / "artifacts", "call_1")
    assert [b["type"] for b in picture.content] == ["text", "image", "resource"]
    image = tmp_path / "artifacts" / "call_1-1.png"
    assert image.read_bytes().startswith(b"\x89PNG")
    assert f"saved to {image}" in text and "some notes" in text
    assert len(details["artifacts"]) == 2

    broken = toolbox.call("broken", {}, timeout_s=CALL_S)
    assert broken.is_error is True and broken.content[0]["text"] == "the thing is broken"


def test_unknown_tool_and_bad_arguments_do_not_kill_the_server(toolbox: McpServer) -> None:
    unknown = toolbox.call("no_such_tool", {}, timeout_s=CALL_S)  # this SDK's servers answer with isError
    assert unknown.is_error is True
    bad = toolbox.call("shout", {"text": 42, "extra": 1}, timeout_s=CALL_S)
    assert bad.is_error is True
    assert toolbox.call("shout", {"text": "still here"}, timeout_s=CALL_S).content[0]["text"] == "STILL HERE"


def test_call_timeout_then_the_server_still_answers(toolbox: McpServer) -> None:
    with pytest.raises(McpCallError) as info:  # `hang` never returns: only the call's timeout ends it
        toolbox.call("hang", {}, timeout_s=0.5)
    assert info.value.kind == "timeout" and "within 0.5s" in str(info.value)
    assert "hang" in str(info.value) and "toolbox" in str(info.value)
    assert toolbox.call("shout", {"text": "ok"}, timeout_s=CALL_S).content[0]["text"] == "OK"


def test_concurrent_calls_from_threads(toolbox: McpServer) -> None:
    results: dict[int, str] = {}

    def worker(i: int) -> None:
        results[i] = toolbox.call("shout", {"text": f"n{i}"}, timeout_s=CALL_S).content[0]["text"]

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=HANG_S)
    assert results == {i: f"N{i}" for i in range(8)}


def test_crash_mid_call_then_calls_fail_fast(tmp_path: Path, servers: list[McpServer]) -> None:
    server = McpServer(stdio_config("crashy", "toolbox.py"), log_path=tmp_path / "crashy.log",
                       start_timeout_s=START_S)
    servers.append(server)
    server.start()
    pid = server.pid
    assert pid is not None and alive(pid)
    # "crashed", not "timeout": the death ended the call, and then fails the next one at once, not at its timeout.
    with pytest.raises(McpCallError) as info:
        server.call("die", {}, timeout_s=CALL_S)
    assert info.value.kind == "crashed"
    assert "code 3" in info.value.message and "dying on purpose" in info.value.message
    with pytest.raises(McpCallError) as again:
        server.call("shout", {"text": "x"}, timeout_s=CALL_S)
    assert again.value.kind == "crashed"
    assert not alive(pid)  # the crashed process is gone, not merely marked
    server.close()
    with pytest.raises(McpCallError) as closed:
        server.call("shout", {"text": "x"}, timeout_s=CALL_S)
    assert closed.value.kind == "closed"


def test_close_ends_the_process_and_is_idempotent(tmp_path: Path) -> None:
    log = tmp_path / "closer.log"
    server = McpServer(stdio_config("closer", "toolbox.py"), log_path=log, start_timeout_s=START_S).start()
    pid = server.pid
    assert pid is not None and alive(pid)
    # A call hanging in another thread must not hold close() up: its timeout outlasts every wait here.
    errors: list[McpCallError] = []

    def hang() -> None:
        try:
            server.call("hang", {}, 10 * HANG_S)
        except McpCallError as exc:
            errors.append(exc)

    hanging = threading.Thread(target=hang)
    hanging.start()
    until(lambda: "toolbox: hanging" in log.read_text(), "the hanging call to reach the server")
    returns(lambda: (server.close(), server.close()), "close() while a call hangs")
    hanging.join(timeout=HANG_S)
    assert not hanging.is_alive()
    assert [e.kind for e in errors] == ["closed"]
    assert not [t for t in threading.enumerate() if t.name == "mcp-closer"]  # the loop thread is gone too
    until(lambda: not alive(pid), "the closed server to be gone")


def test_kill_for_an_interrupt(servers: list[McpServer]) -> None:
    server = McpServer(stdio_config("killme", "toolbox.py"), start_timeout_s=START_S)
    servers.append(server)
    server.start()
    pid = server.pid
    assert pid is not None
    server.kill()
    until(lambda: not alive(pid), "the killed server to be gone")
    with pytest.raises(McpCallError) as info:
        server.call("shout", {"text": "x"}, timeout_s=CALL_S)
    assert info.value.kind == "crashed"


def test_wrap_and_exact_environment(tmp_path: Path, servers: list[McpServer]) -> None:
    marker = tmp_path / "marker.json"
    seen: list[list[str]] = []

    def wrap(argv: list[str], env: dict[str, str]) -> tuple[list[str], dict[str, str]]:
        seen.append(list(argv))
        return ["/usr/bin/env", "MARKER=1", *argv, "--marker", str(marker)], {**env, "WRAPPED": "yes"}

    config = ServerConfig(name="wrapped", transport="stdio", command=sys.executable,
                          args=(str(Path(__file__).parent / "servers" / "toolbox.py"),), env={"API_KEY": "k"})
    server = McpServer(config, wrap=wrap, base_env=BASE, start_timeout_s=START_S)
    servers.append(server)
    server.start()
    assert seen == [[sys.executable, str(Path(__file__).parent / "servers" / "toolbox.py")]]
    recorded = json.loads(marker.read_text())
    assert recorded["marker"] == "1" and recorded["pid"] == server.pid  # env exec'd the server in place
    env = json.loads(server.call("environment", {}, timeout_s=CALL_S).content[0]["text"])
    assert env == {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent-home", "LANG": "C.UTF-8", "TMPDIR": "/tmp",
                   "API_KEY": "k", "WRAPPED": "yes", "MARKER": "1"}


def test_config_env_overrides_the_base(servers: list[McpServer]) -> None:
    server = McpServer(stdio_config("envy", "toolbox.py", env={"HOME": "/custom"}), base_env=BASE,
                       start_timeout_s=START_S)
    servers.append(server)
    server.start()
    env = json.loads(server.call("environment", {}, timeout_s=CALL_S).content[0]["text"])
    assert env["HOME"] == "/custom" and "RUNNER_SECRET" not in env and "USER" not in env


def test_garbage_on_stdout_fails_the_start(tmp_path: Path) -> None:
    # The garbage is told at the start timeout (the client waits it out), so the timeout stays short; the
    # server prints at once, in a fraction of the 2 s even on a loaded machine.
    server = McpServer(stdio_config("garbage", "misbehaving.py", "garbage"), log_path=tmp_path / "g.log",
                       start_timeout_s=2)
    with pytest.raises(McpStartError) as info:
        returns(server.start, "the start to end at its timeout")
    assert info.value.kind == "protocol" and "not JSON-RPC" in info.value.message
    assert "Hello! this is not JSON-RPC" in info.value.message
    assert "ignored stdout line" in (tmp_path / "g.log").read_text()
    assert server.pid is not None
    until(lambda: not alive(server.pid), "the server to be gone")


def test_no_answer_to_initialize_is_a_start_timeout() -> None:
    # The server never answers, nor exits of itself (for longer than every wait here): the start ends by its
    # timeout, and the process goes only because the client kills it.
    server = McpServer(stdio_config("silent", "misbehaving.py", "silent"), start_timeout_s=1)
    with pytest.raises(McpStartError) as info:
        returns(server.start, "the start to end at its timeout")
    assert info.value.kind == "timeout" and "within 1s" in info.value.message
    assert server.pid is not None
    until(lambda: not alive(server.pid), "the server to be gone")


def test_exit_at_start_reports_stderr(tmp_path: Path) -> None:
    log = tmp_path / "nested" / "dir" / "exit.log"
    server = McpServer(stdio_config("exiter", "misbehaving.py", "exit"), log_path=log, start_timeout_s=START_S)
    with pytest.raises(McpStartError) as info:
        server.start()
    assert info.value.kind == "crashed"  # not "timeout": the exit ended the start
    assert "code 2" in info.value.message and "missing API key EXAMPLE_TOKEN" in info.value.message
    assert "missing API key EXAMPLE_TOKEN" in log.read_text()


def test_command_not_found() -> None:
    server = McpServer(ServerConfig(name="nf", transport="stdio", command="/nonexistent/mcp-server"))
    with pytest.raises(McpStartError) as info:
        server.start()
    assert info.value.kind == "spawn" and "/nonexistent/mcp-server" in info.value.message
    with pytest.raises(McpCallError) as call:
        server.call("x", {}, timeout_s=1)
    assert call.value.kind == "closed"


def test_interpreter_exit_without_close_ends_the_server(tmp_path: Path) -> None:
    marker = tmp_path / "marker.json"
    script = textwrap.dedent(f"""
        import sys
        from runner.mcp.client import McpServer
        from tests.mcp.conftest import stdio_config
        server = McpServer(stdio_config("leaky", "toolbox.py", "--marker", {str(marker)!r}),
                           start_timeout_s={START_S})
        server.start()
        print(server.call("shout", {{"text": "bye"}}, timeout_s={CALL_S}).content[0]["text"])
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=3 * START_S,
                          cwd=Path(__file__).parents[2])
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "BYE"
    pid = json.loads(marker.read_text())["pid"]
    until(lambda: not alive(pid), "the server to end with the interpreter")
