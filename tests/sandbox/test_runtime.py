"""runner/sandbox/runtime.py with the real bubblewrap: open a sandbox, wrap a command, run it."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from runner.policy.egress import Verdict
from runner.policy.sandbox_config import SandboxConfig
from runner.sandbox.runtime import INSIDE, PROXY_PORT, PROXY_VARS, Sandbox, open_sandbox
from tests.fakes.listener import Listener
from tests.sandbox.test_proxy import Decider, Origin

pytestmark = pytest.mark.usefixtures("sandbox_available")

TIMEOUT_S = 30

PROBE = r"""
echo made > "$WS/made.txt" && echo ws_write=ok || echo ws_write=denied
touch "$USR_FILE" 2>/dev/null && echo usr_write=ok || echo usr_write=denied
test -e "$OUTSIDE" && echo outside=visible || echo outside=hidden
(echo hi > "/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && echo tcp=ok || echo tcp=refused
echo pid=$$
echo ppid=$PPID
echo pidns=$(readlink /proc/self/ns/pid)
echo pids=$(ls /proc | grep '^[0-9]' | tr '\n' ,)
echo home=$HOME
echo tmpdir=$TMPDIR
"""


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


def _open(config: SandboxConfig, workspace: Path, **kwargs: object) -> Sandbox:
    return open_sandbox(config, workspace=workspace, protected=[], readable=[], writable=[], environ=os.environ,
                        **kwargs)  # type: ignore[arg-type]


@pytest.fixture
def box(workspace: Path) -> Iterator[Sandbox]:
    b = _open(SandboxConfig(mode="required", network="none"), workspace)
    try:
        yield b
    finally:
        b.close()


def _run(box: Sandbox, script: str, env: dict[str, str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    argv, full_env = box.wrap(["bash", "-c", script], env, **kwargs)  # type: ignore[arg-type]
    return subprocess.run(argv, env=full_env, capture_output=True, text=True, timeout=TIMEOUT_S,
                          stdin=subprocess.DEVNULL)


def _probe(box: Sandbox, workspace: Path, tmp_path: Path) -> tuple[dict[str, str], Listener, Path]:
    outside = tmp_path / "outside.txt"
    outside.write_text("the host's own file\n")
    usr_file = Path(f"/usr/agent-run-runtime-test-{os.getpid()}")
    listener = Listener()
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "WS": str(workspace), "OUTSIDE": str(outside),
           "USR_FILE": str(usr_file), "PORT": str(listener.port)}
    done = _run(box, PROBE, env)
    assert done.returncode == 0, done.stderr
    out = dict(line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)
    return out, listener, usr_file


def test_a_command_is_contained(box: Sandbox, workspace: Path, tmp_path: Path) -> None:
    out, listener, usr_file = _probe(box, workspace, tmp_path)
    assert out["ws_write"] == "ok" and (workspace / "made.txt").read_text() == "made\n"
    assert out["usr_write"] == "denied" and not usr_file.exists()
    assert out["outside"] == "hidden"
    assert out["tcp"] == "refused" and listener.accepted == 0
    # Its own pid namespace: the runner and everything else on the host are out of sight.
    assert out["pidns"] != os.readlink("/proc/self/ns/pid")
    assert out["ppid"] == "1" and int(out["pid"]) <= 3
    pids = [int(p) for p in out["pids"].split(",") if p]
    assert pids and max(pids) < 20, pids
    assert box.scratch is not None
    assert out["home"] == str(box.scratch / "home") and out["tmpdir"] == str(box.scratch / "tmp")


def test_the_same_probe_gets_out_with_the_sandbox_off(workspace: Path, tmp_path: Path) -> None:
    """The control for the test above: without the sandbox the probe sees and reaches the host."""
    off = _open(SandboxConfig(mode="off"), workspace)
    try:
        out, listener, _usr_file = _probe(off, workspace, tmp_path)
    finally:
        off.close()
    assert out["ws_write"] == "ok" and out["outside"] == "visible"
    assert out["tcp"] == "ok" and listener.accepted == 1
    assert out["pidns"] == os.readlink("/proc/self/ns/pid")
    assert out["ppid"] == str(os.getpid())


def test_off_returns_the_command_unchanged(workspace: Path) -> None:
    off = _open(SandboxConfig(mode="off", network="none"), workspace)
    env = {"PATH": "/usr/bin", "http_proxy": "http://corp:8080"}
    argv, wrapped_env = off.wrap(["bash", "-c", "true"], env)
    assert argv == ["bash", "-c", "true"] and wrapped_env == env
    wrapped_env["X"] = "1"
    assert "X" not in env  # a copy
    assert off.describe() == {"mode": "off", "active": False, "mechanism": None, "network": "all",
                              "reason": "sandbox.mode is off"}
    assert off.scratch is None and off.private is None and off.proxy is None
    assert off.readonly_layout([], []) is None
    off.close()


def test_describe_an_active_sandbox(box: Sandbox) -> None:
    assert box.describe() == {"mode": "required", "active": True, "mechanism": "bwrap", "network": "none",
                              "reason": None}


def test_wrap_with_no_network_drops_proxy_settings(box: Sandbox) -> None:
    argv, env = box.wrap(["true"], {"PATH": "/usr/bin", "https_proxy": "http://corp:8080", "NO_PROXY": "x",
                                    "KEEP": "1"})
    assert argv[0] == box.probe.bwrap and argv[-2:] == ["--", "true"]
    assert "--share-net" not in argv
    assert not {"https_proxy", "NO_PROXY"} & set(env) and env["KEEP"] == "1"
    assert box.scratch is not None and env["HOME"] == str(box.scratch / "home")


def test_network_all_shares_the_network(workspace: Path) -> None:
    b = _open(SandboxConfig(mode="required", network="all"), workspace)
    try:
        argv, _env = b.wrap(["true"], {"PATH": "/usr/bin"})
        assert "--share-net" in argv and b.proxy is None
        assert b.describe()["network"] == "all"
    finally:
        b.close()


def test_close_removes_the_scratch_and_private_dirs(workspace: Path) -> None:
    b = _open(SandboxConfig(mode="required", network="allow", allow=("pypi.org",)), workspace)
    assert b.scratch is not None and b.private is not None and b.proxy is not None
    scratch, private, sock = b.scratch, b.private, Path(b.proxy.socket_path)
    assert (scratch / "home").is_dir() and (scratch / "tmp").is_dir() and sock.is_socket()
    assert sock.is_relative_to(private)
    b.close()
    assert not scratch.exists() and not private.exists() and not sock.exists()
    b.close()  # twice is fine


def test_the_workspace_is_read_only_for_the_runners_own_helpers(box: Sandbox, workspace: Path) -> None:
    (workspace / "a.txt").write_text("content\n")
    layout = box.readonly_layout([], [])
    assert layout is not None
    done = _run(box, 'cat "$WS/a.txt"; echo x > "$WS/b.txt" && echo wrote || echo refused',
                {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "WS": str(workspace)}, layout=layout)
    assert done.stdout.splitlines() == ["content", "refused"], done.stderr
    assert not (workspace / "b.txt").exists()


FETCH = r"""
exec 3<>/dev/tcp/127.0.0.1/$PROXY_PORT || exit 9
printf 'GET http://127.0.0.1:%s/from-inside HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n' "$TARGET" >&3
cat <&3
"""


@pytest.mark.parametrize("own_bridge", [False, True])
@pytest.mark.parametrize("allowed", [True, False])
def test_an_allow_list_goes_through_the_egress_proxy(workspace: Path, allowed: bool, own_bridge: bool) -> None:
    """A command of the run joins the run's network namespace and its bridge; a process with a layout of its
    own (an MCP server) starts a bridge of its own. Both go through the same proxy."""
    origin = Origin()
    decider = Decider(Verdict(allowed, True, "decided by the test"))
    b = _open(SandboxConfig(mode="required", network="allow", allow=(f"127.0.0.1:{origin.port}",)), workspace,
              decide_net=decider)
    try:
        assert b.describe()["network"] == {"allow": [f"127.0.0.1:{origin.port}"]}
        argv, env = b.wrap(["bash", "-c", FETCH], {"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
                           layout=b.layout if own_bridge else None)
        assert all(env[var] == f"http://127.0.0.1:{PROXY_PORT}" for var in PROXY_VARS)
        assert (f"{INSIDE}/proxy.sock" in argv) == own_bridge and ("--share-net" in argv) != own_bridge
        env.update({"PROXY_PORT": str(PROXY_PORT), "TARGET": str(origin.port)})
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=TIMEOUT_S,
                              stdin=subprocess.DEVNULL)
    finally:
        b.close()
        origin.close()
    assert done.returncode == 0, done.stderr
    assert decider.calls == [("127.0.0.1", origin.port)]
    if allowed:
        assert "hello from /from-inside" in done.stdout
        assert [p for _m, p, _h, _b in origin.requests] == ["/from-inside"]
    else:
        assert done.stdout.startswith("HTTP/1.1 403 Forbidden") and "decided by the test" in done.stdout
        assert origin.requests == []
