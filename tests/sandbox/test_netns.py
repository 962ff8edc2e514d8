"""runner/sandbox/netns.py: under a network allow-list the run's commands join one network namespace, made
once with its bridge, instead of starting a bridge each; every other property stays per call."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from runner.policy.egress import Verdict
from runner.policy.sandbox_config import SandboxConfig
from runner.sandbox.runtime import INSIDE, PROXY_PORT, PROXY_VARS, open_sandbox
from tests.fakes.openai_server import reply
from tests.fakes.wait import until
from tests.sandbox.test_escape import HTTPTarget
from tests.sandbox.test_proxy import Decider, Origin

pytestmark = pytest.mark.usefixtures("sandbox_available")

TIMEOUT_S = 30
# What each call reports: its namespaces, whether an earlier call's scratch file in /tmp survived, then a
# fetch through the proxy.
CALL = ("echo net=$(readlink /proc/self/ns/net) pid=$(readlink /proc/self/ns/pid); "
        "ls /tmp; touch /tmp/mine; python3 -c \"import urllib.request as u; "
        "print(u.urlopen('http://127.0.0.1:%d/x', timeout=10).read().decode())\"")


def test_the_runs_commands_share_one_network_namespace_and_each_connection_is_its_calls(
        fake, workspace, agent_run, tmp_path):
    target = HTTPTarget()
    policy = tmp_path / "net.jsonc"
    policy.write_text(json.dumps({"extends": "ci", "sandbox": {"mode": "required", "network": {
        "allow": [f"127.0.0.1:{target.port}"]}}}))
    fake.add(reply(calls=[("bash", {"command": CALL % target.port})]),
             reply(calls=[("bash", {"command": CALL % target.port})]),
             reply("done"))
    r = agent_run("--policy", str(policy), "--approve", "bash:shell:*", "task.md")
    assert r.code == 0, r.stderr
    assert r.summary["sandbox"]["network"] == {"allow": [f"127.0.0.1:{target.port}"]}
    results = r.of_type("tool_result")
    assert [res["ok"] for res in results] == [True, True], results
    seen = [dict(f.split("=", 1) for f in res["content"].splitlines()[0].split()) for res in results]
    assert seen[0]["net"] == seen[1]["net"] != os.readlink("/proc/self/ns/net")
    assert seen[0]["pid"] != seen[1]["pid"]  # each call still has a pid namespace of its own ...
    assert all("mine" not in res["content"] for res in results)  # ... and a /tmp of its own
    assert all("hello from the allowed host" in res["content"] for res in results)
    # The bridge is shared; each connection is still recorded under the call that made it.
    calls = [c["call_id"] for c in r.of_type("tool_call")]
    assert [(e["call_id"], e["decision"]) for e in r.of_type("network_request")] == [(c, "allow") for c in calls]
    assert target.hits == 2


def _open(workspace: Path, decide: Decider, port: int):
    return open_sandbox(SandboxConfig(mode="required", network="allow", allow=(f"127.0.0.1:{port}",)),
                        workspace=workspace, protected=[], readable=[], writable=[], environ=os.environ,
                        decide_net=decide)


FETCH = r"""
exec 3<>/dev/tcp/127.0.0.1/$PROXY_PORT || exit 9
printf 'GET http://127.0.0.1:%s/x HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n' "$TARGET" >&3
cat <&3
"""


def _fetch(argv: list[str], env: dict[str, str], port: int) -> subprocess.CompletedProcess[str]:
    env = {**env, "PROXY_PORT": str(PROXY_PORT), "TARGET": str(port)}
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=TIMEOUT_S, stdin=subprocess.DEVNULL)


def test_another_principal_and_a_gone_holder_get_a_bridge_of_their_own(tmp_path: Path) -> None:
    origin, decider = Origin(), Decider(Verdict(True, True, "test"))
    box = _open(tmp_path, decider, origin.port)
    try:
        assert box.net is not None, "this machine joins namespaces (nsenter, nested user namespaces)"
        shared, env = box.wrap(["bash", "-c", FETCH], {"PATH": os.environ.get("PATH", "/usr/bin:/bin")})
        assert "--share-net" in shared and f"{INSIDE}/proxy.sock" not in shared
        assert all(env[var] == f"http://127.0.0.1:{PROXY_PORT}" for var in PROXY_VARS)
        assert "hello from /x" in _fetch(shared, env, origin.port).stdout
        # An MCP server or the runner's git passes a layout of its own: not the commands' loopback.
        own, env = box.wrap(["bash", "-c", FETCH], {"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
                            layout=box.layout)
        assert "--share-net" not in own and f"{INSIDE}/proxy.sock" in own
        assert "hello from /x" in _fetch(own, env, origin.port).stdout
        pid = box.net.pid
        assert _alive(pid)
        box.net.close()  # what the sandbox's close does as the run ends
        assert box.net.proc.returncode is not None
        after, env = box.wrap(["bash", "-c", FETCH], {"PATH": os.environ.get("PATH", "/usr/bin:/bin")})
        assert f"{INSIDE}/proxy.sock" in after, "a holder that died is never joined"
        assert "hello from /x" in _fetch(after, env, origin.port).stdout
    finally:
        box.close()
        origin.close()
    assert decider.calls == [("127.0.0.1", origin.port)] * 3
    until(lambda: not _alive(pid), "the holder's first process to end")


def _alive(pid: int) -> bool:
    """Running, not gone nor a zombie (its reaper, here the machine's init, may collect it much later)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in status


def test_children_running_commands_at_once_each_have_their_connections_decided_as_theirs(
        fake, workspace, agent_run, tmp_path):
    # Two children's commands run at the same time (each waits for the other's file before it fetches): each
    # connection names its command's token, so each is decided and recorded under its own child, and neither is
    # refused as "several running, no caller named".
    target = HTTPTarget()
    policy = tmp_path / "net.jsonc"
    policy.write_text(json.dumps({"extends": "ci", "risk": {"rules": [
        {"domain": "task", "pattern": "agent:**", "level": "medium"}]}, "permission": {"rules": [
        {"domain": "task", "pattern": "agent:**", "decision": "allow"}]},
        "sandbox": {"mode": "required", "network": {"allow": [f"127.0.0.1:{target.port}"]}}}))
    fake.add(reply(calls=[("task", {"description": f"part {i}", "prompt": f"CHILD-{i}: fetch"}) for i in (0, 1)]),
             reply("done"))
    for i in (0, 1):
        both = (f"python3 -c \"import os, time, urllib.request as u; open('ready-{i}', 'w').close(); "
                f"[time.sleep(0.05) for _ in range(400) if not os.path.exists('ready-{1 - i}')]; "
                f"print('together' if os.path.exists('ready-{1 - i}') else 'alone'); "
                f"print(u.urlopen('http://127.0.0.1:{target.port}/x', timeout=10).read().decode())\"")
        fake.route(f"CHILD-{i}", reply(calls=[("bash", {"command": both})]), reply(f"{i} ok"))
    r = agent_run("--policy", str(policy), "--approve", "bash:shell:python3 *", "--approve", "edit:ready-*",
                  "task.md")
    assert r.code == 0, r.stderr
    fetched = [e for e in r.of_type("tool_result") if e["tool"] == "bash"]
    assert len(fetched) == 2 and all("hello from the allowed host" in e["content"] for e in fetched), fetched
    assert all(e["content"].startswith("together") for e in fetched)  # the two commands ran at the same time
    requests = r.of_type("network_request")
    assert sorted((e["agent"]["id"], e["call_id"], e["decision"]) for e in requests) == [
        ("a1", "call_1_0", "allow"), ("a2", "call_1_0", "allow")]
