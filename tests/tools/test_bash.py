"""bash runs real subprocesses; these tests check what a pipeline relies on."""

from __future__ import annotations

import hashlib
import threading
import time
from pathlib import Path

import pytest

from runner.engine.cancel import RunCancel
from runner.tools.base import ToolContext, ToolError
from runner.tools.bash import Bash
from tests.fakes.procs import wait_gone
from tests.fakes.wait import returns, until


def run(ctx, command: str, **extra):
    return Bash().run({"command": command, **extra}, ctx)


def error(ctx, command: str, **extra) -> ToolError:
    with pytest.raises(ToolError) as info:
        run(ctx, command, **extra)
    return info.value


def test_output_and_cwd(ctx, ws):
    out = run(ctx, "pwd; echo out; echo err >&2")
    assert out.content == f"{ws}\nout\nerr\n"
    assert out.details["exit_code"] == 0
    assert out.details["bytes"] == len(out.content.encode())


def test_no_output(ctx):
    assert run(ctx, "true").content == "[no output]"


def test_exit_non_zero_carries_code_and_output(ctx):
    err = error(ctx, "echo partial; exit 3")
    assert err.type == "ExitNonZero"
    assert err.extra == {"output": "partial\n", "exit_code": 3}
    assert err.payload()["error"]["exit_code"] == 3


def test_stdin_is_closed(ctx):
    # With an inherited or open stdin, `cat` would block until the timeout: a Timeout error, not this output.
    assert run(ctx, "cat", timeout_s=60).content == "[no output]"


def test_targets_strip_the_command(ctx):
    assert [t.target for t in Bash().targets({"command": "  npm test \n"}, ctx)] == ["shell:npm test"]


def test_timeout_kills_the_whole_group(ctx, ws):
    # The sleeps outlast every wait here: the call returns, and they are gone, only because the group was killed.
    # The timeout leaves the shell ample time to write its pid files first, even on a loaded machine.
    command = "echo $$ > shell.pid; sleep 300 & echo $! > child.pid; sleep 300"
    err = returns(lambda: error(ctx, command, timeout_s=1), "the call to return once its timeout killed the group")
    assert err.type == "Timeout"
    assert err.message == "command killed after 1.0s"
    child = int((ws / "child.pid").read_text())
    assert wait_gone(child), f"background child {child} outlived the call"
    assert wait_gone(int((ws / "shell.pid").read_text()))
    assert "pid" not in err.extra  # the model's view of a result must not vary when nothing else did


def test_run_deadline_bounds_the_timeout(ws):
    # Without the run's deadline the sleep would end well inside its own timeout_s and the call succeed.
    ctx = ToolContext(workspace=ws, cancel=RunCancel(deadline=time.monotonic() + 0.3))
    err = error(ctx, "sleep 30", timeout_s=60)
    assert err.type == "Timeout"


def test_abort_stops_the_command(ws):
    ctx = ToolContext(workspace=ws, cancel=RunCancel())

    def abort_once_started() -> None:
        until(lambda: (ws / "started").exists(), "the command to start")
        ctx.cancel.stop()

    aborter = threading.Thread(target=abort_once_started, daemon=True)
    aborter.start()
    # Not aborted, the sleep would end and the call succeed.
    err = error(ctx, "touch started; sleep 30")
    aborter.join()
    assert err.type == "Timeout"
    assert "the run is stopping" in err.message


def test_huge_output_keeps_the_tail_and_spills_the_rest(ctx, ws):
    ctx.outputs_dir = ws / "run" / "outputs"
    total = 32 * 1024 * 1024  # the 1 GiB version, with peak RSS, is bench/bench_stream.py
    out = run(ctx, f"printf 'HEAD\\n'; yes | head -c {total - 10}; printf 'TAIL\\n'", timeout_s=120)
    d = out.details
    assert (d["truncated"], d["bytes"]) == (True, total)
    assert out.content.startswith(f"...{total - len(out.content.split(chr(10), 3)[3].encode())} bytes truncated...")
    assert out.content.endswith("y\nTAIL\n")
    assert f"Full output: {d['output_path']}" in out.content
    spilled = Path(d["output_path"]).read_bytes()
    assert len(spilled) == total and spilled.startswith(b"HEAD\n") and spilled.endswith(b"TAIL\n")
    assert hashlib.sha256(spilled).hexdigest() == d["sha256"]
    shown = out.content.split("\n\n", 1)[1]
    assert len(shown.encode()) <= 51200 and shown.count("\n") <= 2000


def test_output_exactly_at_the_limits_is_whole(ctx, ws):
    ctx.outputs_dir = ws / "run" / "outputs"
    out = run(ctx, "for i in $(seq 2000); do echo aaaaaaaaaaaaaaaaaaaaaaaa; done")  # 2000 lines, 50,000 bytes
    assert out.details["truncated"] is False and out.content.count("\n") == 2000
    assert not ctx.outputs_dir.exists() or not any(ctx.outputs_dir.iterdir())
    over = run(ctx, "for i in $(seq 2001); do echo aaaaaaaaaaaaaaaaaaaaaaaa; done")
    assert over.details["truncated"] is True
    assert over.content.startswith("...1 lines truncated...")


def test_environment_is_scrubbed(ctx, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp-secret")
    monkeypatch.setenv("MY_SERVICE_TOKEN", "t")
    monkeypatch.setenv("GITHUB_REPOSITORY", "o/r")
    monkeypatch.setenv("DEPLOY_PASSWORD", "p")
    out = run(ctx, "env")
    assert "sk-secret" not in out.content and "ghp-secret" not in out.content
    assert "MY_SERVICE_TOKEN" not in out.content and "DEPLOY_PASSWORD" not in out.content
    assert "GITHUB_REPOSITORY=o/r" in out.content and "PATH=" in out.content
    ctx.bash = {"env": {"passthrough": ["MY_SERVICE_TOKEN"]}}
    assert "MY_SERVICE_TOKEN=t" in run(ctx, "env").content


def test_policy_caps_the_timeout(ctx):
    ctx.bash = {"maxTimeoutSeconds": 0.3}
    err = error(ctx, "sleep 30", timeout_s=60)  # uncapped, the sleep would end and the call succeed
    assert err.type == "Timeout" and err.message == "command killed after 0.3s"


def test_background_child_dies_when_the_shell_exits(ctx, ws):
    # The child holds the output pipe and outlasts every wait here: killing the group is what lets the call
    # return, and what makes the child go.
    out = returns(lambda: run(ctx, "sleep 300 & echo $! > child.pid; echo started"),
                  "the call to return once the shell exited")
    assert out.content == "started\n"
    assert wait_gone(int((ws / "child.pid").read_text())), "background child outlived the call"


@pytest.mark.parametrize("pidfd", [True, False])
def test_the_exit_is_seen_with_and_without_a_pidfd(ctx, monkeypatch, pidfd):
    """The call waits on a pidfd, woken at the exit itself (Popen.wait's doubling sleep saw a 10 ms sandboxed
    command at ~15 ms); where the kernel has none it polls as before. Either way: the exit code, and a timeout."""
    import os

    if not pidfd:
        monkeypatch.delattr(os, "pidfd_open")
    assert run(ctx, "echo ok").content == "ok\n"
    err = error(ctx, "echo partial; exit 4")
    assert err.type == "ExitNonZero" and err.extra["exit_code"] == 4
    assert error(ctx, "sleep 30", timeout_s=0.5).type == "Timeout"


def test_tail_lines_and_max_lines_show_one_end_and_keep_the_whole(tmp_path, ctx):
    """Issue 34 item 4: the last (or first) N lines of a long output, bounded by the policy's maxLines."""
    from runner.tools.truncate import Limits

    ctx.outputs_dir = tmp_path / "outputs"
    ctx.truncation = Limits(max_lines=50)
    tail = run(ctx, "seq 1 1000", tail_lines=3)
    assert tail.content.endswith("\n998\n999\n1000\n") and "\n997\n" not in tail.content
    assert "...997 lines truncated..." in tail.content
    assert Path(tail.details["output_path"]).read_text() == "".join(f"{i}\n" for i in range(1, 1001))
    head = run(ctx, "seq 1 1000", max_lines=2)
    assert head.content.startswith("1\n2\n\n...998 lines truncated...")
    bounded = run(ctx, "seq 1 1000", tail_lines=500)
    assert "...950 lines truncated..." in bounded.content  # the policy's 50, not 500
    assert error(ctx, "true", tail_lines=1, max_lines=1).type == "InvalidArguments"
