"""bash: a real subprocess in the workspace, stdin closed, its own process group,
an environment scrubbed of secrets.

A timeout (or an interrupt of the run) kills the whole group, and so does the
shell's exit: `cmd &` children cannot outlive the call. Output is streamed to a
spill file as it arrives while only a head and a tail window stay in memory, so
a command printing gigabytes leaves memory flat and the full output on disk.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
from typing import Any

from runner.policy.model import Target
from runner.policy.targets import shell_targets
from runner.tools.base import Tool, ToolContext, ToolError, ToolOutput
from runner.tools.env import scrubbed_env
from runner.tools.erofs import blocked
from runner.tools.process import reader, run_process
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
    """One process's life (runner/tools/process.py), from its start to its output (cut as `shown`: lines_shown)."""
    spill = Spill(ctx.outputs_dir, ctx.truncation.max_bytes, ctx.truncation.ttl_days, ctx.masker)
    try:
        ended = run_process(ctx.cancel, argv, timeout=timeout, pumps=(reader(spill.write),),
                            grace_s=KILL_GRACE_S, cwd=ctx.workspace, stdin=subprocess.DEVNULL, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    except OSError as exc:  # it never started: nothing to kill
        spill.close()
        spill.discard()
        raise ToolError("IOError", f"cannot start bash: {exc}") from None
    timed_out = not ended.exited and not ended.stopping
    limits, from_end = shown
    output, details = spill.finish(limits, from_end=from_end)
    details["exit_code"] = ended.returncode
    # Errors carry no pid: what the model sees must not change when nothing else did.
    if timed_out:
        raise ToolError("Timeout", f"command killed after {timeout:.1f}s", output=output, **_public(details))
    if ctx.cancel.stopping():
        raise ToolError("Timeout", "command killed: the run is stopping", output=output, **_public(details))
    if ended.returncode != 0:
        failed = ToolError("ExitNonZero", f"exit code {ended.returncode}", output=output, **_public(details))
        raise blocked(failed, output, ctx)  # a write the sandbox refused: the model and the workflow are told
    return ToolOutput(output or "[no output]", {**details, "pid": ended.pid})


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

