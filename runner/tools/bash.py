"""bash: a real subprocess in the workspace, stdin closed, its own process group.

A timeout (or an interrupt of the run) kills the whole group, so `cmd &` children
cannot outlive the call. Output is read as it arrives and only a bounded head and
tail are kept, so a command printing gigabytes cannot exhaust memory.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from typing import Any

from runner.policy.model import Target
from runner.policy.targets import shell_targets
from runner.tools.base import Tool, ToolContext, ToolError, ToolOutput

KEEP_BYTES = 25 * 1024  # of head and of tail each
KILL_GRACE_S = 2.0


class Bash(Tool):
    name = "bash"
    domain = "bash"
    description = (
        "Run a shell command with bash in the workspace. stdin is closed (commands that wait for "
        "input get EOF). stdout and stderr are merged. Non-zero exit is an ExitNonZero error with the output."
    )
    schema = {
        "type": "object",
        "properties": {
            "command": {"type": "string", "minLength": 1},
            "timeout_s": {"type": "number", "exclusiveMinimum": 0, "description": "Kill after this many seconds."},
        },
        "required": ["command"],
        "additionalProperties": False,
    }

    def targets(self, args: dict[str, Any], ctx: ToolContext) -> list[Target]:
        return shell_targets(ctx.workspace, args["command"])

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        timeout = min(float(args.get("timeout_s", ctx.default_timeout_s)), ctx.default_timeout_s * 10)
        if ctx.deadline is not None:
            timeout = max(0.0, min(timeout, ctx.deadline - time.monotonic()))
        try:
            proc = subprocess.Popen(
                ["bash", "-c", args["command"]], cwd=ctx.workspace, stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
            )
        except OSError as exc:
            raise ToolError("IOError", f"cannot start bash: {exc}") from None
        capture = _Capture(proc)
        timed_out = False
        try:
            end = time.monotonic() + timeout
            while proc.poll() is None:
                if ctx.abort.is_set() or time.monotonic() >= end:
                    timed_out = not ctx.abort.is_set()
                    break
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=0.05)
        finally:
            # Also on an exception (an interrupt of the run), and also when the shell exited
            # normally: background children (`cmd &`) die with the call, as in CI they must.
            _kill_group(proc, grace_s=0.2 if ctx.abort.is_set() else KILL_GRACE_S)
            capture.join()
        output = capture.text()
        details = {"exit_code": proc.returncode, "output_bytes": capture.total, "pid": proc.pid}
        # Errors carry no pid: what the model sees must not change when nothing else did.
        if timed_out:
            raise ToolError("Timeout", f"command killed after {timeout:.1f}s", output=output,
                            output_bytes=capture.total)
        if ctx.abort.is_set():
            raise ToolError("Timeout", "command killed: the run is stopping", output=output,
                            output_bytes=capture.total)
        if proc.returncode != 0:
            raise ToolError("ExitNonZero", f"exit code {proc.returncode}", output=output, exit_code=proc.returncode)
        return ToolOutput(output or "[no output]", details)


def _kill_group(proc: subprocess.Popen[bytes], grace_s: float = KILL_GRACE_S) -> None:
    if proc.poll() is not None:
        # The shell is gone; whatever is left of its group gets no grace period.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        return
    # An interrupted run must finish within ~2 s, so it gives the group less grace.
    for sig, wait in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            # The leader is gone; children may not be. SIGKILL the rest of the group.
            os.killpg(proc.pid, signal.SIGKILL)
            return
        except ProcessLookupError:
            return
        except subprocess.TimeoutExpired:
            continue


class _Capture:
    """Reads a pipe on a thread, keeping the first and last KEEP_BYTES."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0
        self._pipe = proc.stdout
        self._thread = threading.Thread(target=self._pump, daemon=True)
        self._thread.start()

    def _pump(self) -> None:
        assert self._pipe is not None
        while chunk := self._pipe.read1(65536):
            self.total += len(chunk)
            room = KEEP_BYTES - len(self.head)
            if room > 0:
                self.head += chunk[:room]
                chunk = chunk[room:]
            if chunk:
                self.tail += chunk
                del self.tail[:-KEEP_BYTES]

    def join(self) -> None:
        # Grandchildren that escaped the group may hold the pipe open; don't wait on them forever.
        self._thread.join(timeout=5.0)

    def text(self) -> str:
        head = self.head.decode("utf-8", errors="replace")
        if not self.tail:
            return head
        dropped = self.total - len(self.head) - len(self.tail)
        tail = bytes(self.tail).decode("utf-8", errors="replace")
        if dropped <= 0:
            return head + tail
        return f"{head}\n[… {dropped} bytes omitted …]\n{tail}"
