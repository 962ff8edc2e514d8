"""bash: a real subprocess in the workspace, stdin closed, its own process group,
an environment scrubbed of secrets.

A timeout (or an interrupt of the run) kills the whole group, and so does the
shell's exit: `cmd &` children cannot outlive the call. Output is streamed to a
spill file as it arrives while only a head and a tail window stay in memory, so
a command printing gigabytes leaves memory flat and the full output on disk.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import os
import signal
import subprocess
import threading
from typing import Any

from runner.policy.model import Target
from runner.policy.targets import shell_targets
from runner.tools.base import Tool, ToolContext, ToolError, ToolOutput
from runner.tools.env import scrubbed_env
from runner.tools.erofs import blocked
from runner.tools.spill import Spill
from runner.tools.truncate import Limits, positive

KILL_GRACE_S = 2.0
DEFAULT_MAX_TIMEOUT_S = 120.0


class Bash(Tool):
    name = "bash"
    domain = "bash"
    risk = "medium"
    aliases = ("Bash",)
    keep = "tail"
    sized = True
    description = (
        "Run bash in the workspace (no stdin; timeout_s 0: default); long output keeps its end (tail_lines/"
        "max_lines: last/first N lines), all kept in a file."
    )
    schema = {
        "type": "object",
        "properties": {
            "command": {"type": "string", "minLength": 1},
            # 0 means the default: small models send it for "no particular limit" (failing the call for it
            # cost a run its scenario).
            "timeout_s": {"type": "number", "minimum": 0},
            "tail_lines": {"type": "integer"},
            "max_lines": {"type": "integer"},
            "max_bytes": {"type": "integer"},
        },
        "required": ["command"],
        "additionalProperties": False,
    }

    def targets(self, args: dict[str, Any], ctx: ToolContext) -> list[Target]:
        _refuse_nul(args["command"])
        return shell_targets(ctx.workspace, args["command"])

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        _refuse_nul(args["command"])
        cap = float(ctx.bash.get("maxTimeoutSeconds", DEFAULT_MAX_TIMEOUT_S))
        timeout = min(float(args.get("timeout_s") or ctx.default_timeout_s), cap)
        left = ctx.cancel.remaining()
        if left is not None:
            timeout = min(timeout, left)
        env = scrubbed_env(os.environ, (ctx.bash.get("env") or {}).get("passthrough"))
        argv = ["bash", "-c", args["command"]]
        shown = lines_shown(args, ctx.truncation)
        if ctx.sandbox is None:
            return _run(argv, env, timeout, ctx, shown)
        # Its connections are decided under this call (and this agent's policy), even beside other agents' commands.
        with ctx.sandbox.calling(ctx.net(ctx.call_id, ctx.call_tool) if ctx.net else None) as caller:
            argv, env = ctx.sandbox.wrap(argv, env, caller=caller)
            return _run(argv, env, timeout, ctx, shown)


def lines_shown(args: dict[str, Any], limits: Limits) -> tuple[Limits, bool]:
    """The limits this call's output is cut to, and whether its end is kept: `tail_lines` N keeps the last N lines,
    `max_lines` N the first N, each at most the policy's truncation.maxLines (its byte limit holds as well);
    neither: the policy's limits, the end kept. The whole output is in the spill file either way."""
    tail, head = positive(args.get("tail_lines")), positive(args.get("max_lines"))
    if tail and head:
        raise ToolError("InvalidArguments", "give tail_lines (the last lines) or max_lines (the first), not both")
    if not (tail or head):
        return limits, True
    return dataclasses.replace(limits, max_lines=min(tail or head or 0, limits.max_lines)), bool(tail)


def _run(argv: list[str], env: dict[str, str], timeout: float, ctx: ToolContext,
         shown: tuple[Limits, bool]) -> ToolOutput:
    """One process's life, from its start to its output (cut as `shown`: lines_shown); kept in one piece for its
    signal safety."""
    spill = Spill(ctx.outputs_dir, ctx.truncation.max_bytes, ctx.truncation.ttl_days, ctx.masker)
    proc: subprocess.Popen[bytes] | None = None
    timed_out = False
    pump: threading.Thread | None = None
    # From the fork on, an interrupt may land anywhere (even while the pump thread starts): one that lands while the
    # process starts is held until it is tracked, then raised inside this try, so the group is always killed.
    try:
        with ctx.cancel.starting_process() as track:
            try:
                proc = subprocess.Popen(
                    argv, cwd=ctx.workspace, stdin=subprocess.DEVNULL, env=env,
                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
                )
            except OSError as exc:
                raise ToolError("IOError", f"cannot start bash: {exc}") from None
            track(proc.pid)  # its own group (start_new_session): a hurried exit of the run kills it
        pump = threading.Thread(target=_pump, args=(proc, spill), daemon=True)
        pump.start()
        if not ctx.cancel.wait(proc, timeout):
            timed_out = not ctx.cancel.stopping()
    finally:
        if proc is None:  # it never started: nothing to kill (a held interrupt is raised on the way out)
            spill.close()
            spill.discard()
        else:
            # Also on an exception (an interrupt of the run), and also when the shell exited
            # normally: background children (`cmd &`) die with the call, as in CI they must.
            _kill_group(proc, grace_s=0.2 if ctx.cancel.stopping() else KILL_GRACE_S)
            ctx.cancel.forget(proc.pid)  # gone: its number may be reused
            # Grandchildren that escaped the group may hold the pipe open; don't wait on them forever.
            if pump is not None and pump.is_alive():
                pump.join(timeout=5.0)
    assert proc is not None  # the finally above re-raised otherwise
    limits, from_end = shown
    output, details = spill.finish(limits, from_end=from_end)
    details["exit_code"] = proc.returncode
    # Errors carry no pid: what the model sees must not change when nothing else did.
    if timed_out:
        raise ToolError("Timeout", f"command killed after {timeout:.1f}s", output=output, **_public(details))
    if ctx.cancel.stopping():
        raise ToolError("Timeout", "command killed: the run is stopping", output=output, **_public(details))
    if proc.returncode != 0:
        failed = ToolError("ExitNonZero", f"exit code {proc.returncode}", output=output, **_public(details))
        raise blocked(failed, output, ctx)  # a write the sandbox refused: the model and the workflow are told
    return ToolOutput(output or "[no output]", {**details, "pid": proc.pid})


def _refuse_nul(command: str) -> None:
    """A NUL byte cannot be passed to bash (an argv string ends at it): refused before any decision,
    so what is decided is never a shortened command, and the model is told why."""
    at = command.find("\x00")
    if at >= 0:
        raise ToolError("InvalidArguments", f"the command contains a NUL byte (\\x00) at character {at}; bash "
                        "cannot run it: remove it, or produce the byte inside the command (printf '\\0')")


def _public(details: dict[str, Any]) -> dict[str, Any]:
    """What an error result shows the model: the exit code, and where the full output is when cut."""
    keep = ("exit_code", "truncated", "output_path", "bytes", "lines") if details.get("truncated") else ("exit_code",)
    return {k: details[k] for k in keep if details.get(k) is not None}


def _pump(proc: subprocess.Popen[bytes], spill: Spill) -> None:
    assert isinstance(proc.stdout, io.BufferedReader)  # stdout=PIPE with the default buffering
    while chunk := proc.stdout.read1(65536):
        spill.write(chunk)


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
