"""bash runs real subprocesses; these tests check what a pipeline relies on."""

from __future__ import annotations

import threading
import time

import pytest

from runner.tools.base import ToolContext, ToolError
from runner.tools.bash import KEEP_BYTES, Bash
from tests.fakes.procs import wait_gone


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
    assert out.details["output_bytes"] == len(out.content.encode())


def test_no_output(ctx):
    assert run(ctx, "true").content == "[no output]"


def test_exit_non_zero_carries_code_and_output(ctx):
    err = error(ctx, "echo partial; exit 3")
    assert err.type == "ExitNonZero"
    assert err.extra == {"output": "partial\n", "exit_code": 3}
    assert err.payload()["error"]["exit_code"] == 3


def test_stdin_is_closed(ctx):
    start = time.monotonic()
    # With an inherited or open stdin, `cat` would block until the timeout.
    assert run(ctx, "cat", timeout_s=10).content == "[no output]"
    assert time.monotonic() - start < 5


def test_targets_strip_the_command(ctx):
    assert [t.target for t in Bash().targets({"command": "  npm test \n"}, ctx)] == ["shell:npm test"]


def test_timeout_kills_the_whole_group(ctx, ws):
    start = time.monotonic()
    err = error(ctx, "echo $$ > shell.pid; sleep 30 & echo $! > child.pid; sleep 30", timeout_s=0.5)
    assert err.type == "Timeout"
    assert err.message == "command killed after 0.5s"
    # Well under the sleeps: the call returns once the group is killed.
    assert time.monotonic() - start < 10
    child = int((ws / "child.pid").read_text())
    assert wait_gone(child), f"background child {child} outlived the call"
    assert wait_gone(int((ws / "shell.pid").read_text()))
    assert "pid" not in err.extra  # the model's view of a result must not vary when nothing else did


def test_run_deadline_bounds_the_timeout(ws):
    ctx = ToolContext(workspace=ws, deadline=time.monotonic() + 0.3)
    start = time.monotonic()
    err = error(ctx, "sleep 30", timeout_s=60)
    assert err.type == "Timeout"
    assert time.monotonic() - start < 10


def test_abort_stops_the_command(ws):
    ctx = ToolContext(workspace=ws)
    timer = threading.Timer(0.3, ctx.abort.set)
    timer.start()
    try:
        start = time.monotonic()
        err = error(ctx, "sleep 30")
    finally:
        timer.cancel()
    assert err.type == "Timeout"
    assert "the run is stopping" in err.message
    assert time.monotonic() - start < 10


def test_huge_output_keeps_head_and_tail(ctx):
    total = 5_000_000
    out = run(ctx, f"printf 'HEAD'; yes | head -c {total - 8}; printf 'TAIL'", timeout_s=30)
    assert out.details["output_bytes"] == total
    dropped = total - 2 * KEEP_BYTES
    marker = f"\n[… {dropped} bytes omitted …]\n"
    assert marker in out.content
    head, tail = out.content.split(marker)
    assert head.startswith("HEAD") and len(head) == KEEP_BYTES
    assert tail.endswith("TAIL") and len(tail) == KEEP_BYTES


def test_output_just_over_head_is_not_marked(ctx):
    # Head and tail touch: nothing was dropped, so no marker and no lost bytes.
    out = run(ctx, f"head -c {KEEP_BYTES + 10} /dev/zero | tr '\\0' a")
    assert out.content == "a" * (KEEP_BYTES + 10)


def test_background_child_dies_when_the_shell_exits(ctx, ws):
    started = time.monotonic()
    out = run(ctx, "sleep 30 & echo $! > child.pid; echo started")
    assert out.content == "started\n"
    # The child held the output pipe; killing the group is what lets the call return promptly.
    assert time.monotonic() - started < 4
    assert wait_gone(int((ws / "child.pid").read_text())), "background child outlived the call"
