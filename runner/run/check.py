"""A task's `check`: a shell command the runner runs after the agent finishes. It decides pass/fail.

The check is the runner's call, not the model's: the policy still decides it (its permission_decision is
recorded under the call id `check`, so a denied check is replayed like any denied call), it runs with the
bash tool in the sandbox, but it passes no guard (a check failing as the model's own runs of the same command
did is not a doom loop), is not a tool_call (nor counted in `tool_calls`), and is recorded as
check_started / check_finished and in summary.json `check`. It runs with whatever tools the model was offered
(`--tools`): the bash tool is taken here, not from the registry.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path
from typing import Any

from runner.core.events import CheckFinished, CheckStarted
from runner.core.outcome import Status
from runner.core.shown import shown, shown_obj
from runner.engine.call import CallEnv, decide_and_record
from runner.engine.recorder import Recording
from runner.record.rundir import write_atomic
from runner.report.transcript import CHECK_CALL_ID, CHECK_TAIL_LINES, tail_lines
from runner.tools.base import ToolError
from runner.tools.bash import Bash

__all__ = ["CHECK_CALL_ID", "CHECK_OUTPUT", "run_check"]

CHECK_OUTPUT = "check_output.txt"  # a failed check's whole output, in the run directory (masked)
DENIED = ("ApprovalRequired", "ToolNotAllowed")


def run_check(command: str, env: CallEnv, rec: Recording) -> tuple[Status, str | None] | None:
    """None when the check passed; else the run's new ending: failed (exit 1) or denied (exit 3)."""
    rec.emit(CheckStarted(call_id=CHECK_CALL_ID, command=command))
    started = time.monotonic()
    error_type, exit_code, output, spilled = _execute(command, env, rec)
    record: dict[str, Any] = {"command": command, "ok": error_type is None, "error_type": error_type,
                              "exit_code": exit_code, "duration_s": round(time.monotonic() - started, 4)}
    if error_type is not None and error_type not in DENIED:
        # What a person debugging a red job reads first: stderr, the step summary, JUnit and the transcript
        # all read it from here; the whole output beside it (the events and summary.json are masked, and so is it).
        record["output_tail"] = tail_lines(output, CHECK_TAIL_LINES)
        record["output_path"] = _keep_output(rec, output, spilled)
    rec.lifecycle.section("check", record)
    rec.emit(CheckFinished(**{"output_tail": None, "output_path": None, **record, "call_id": CHECK_CALL_ID}))
    if error_type is None:
        return None
    if error_type in DENIED:
        return Status.DENIED, f"the check `{command}` was not allowed by the policy"
    return Status.FAILED, f"the check `{command}` failed ({error_type}, exit code {exit_code})"


def _execute(command: str, env: CallEnv, rec: Recording) -> tuple[str | None, int | None, str, str | None]:
    """(error type or None, exit code, output, the spill file holding the whole output when it was cut)."""
    tool, args = Bash(), {"command": command}
    try:
        targets = tool.targets(args, env.ctx)
        decision, denial = decide_and_record(env, CHECK_CALL_ID, tool.name, tool.domain, targets, rec.emit)
        if denial is not None:
            return ("ToolNotAllowed" if decision.decision == "deny" else "ApprovalRequired"), None, "", None
        # Targets the command meets while it runs (a redirect's URL) are recorded under the check too.
        result = tool.run(args, env.ctx.for_call(CHECK_CALL_ID, tool.name))
        details = shown_obj(result.details)
        return None, details.get("exit_code"), shown(result.content), _spill(details)
    except ToolError as err:
        extra = shown_obj(err.extra)
        output = extra.get("output", err.message)  # no output: a command that could not start says why
        return err.type, extra.get("exit_code"), shown(str(output or "")), _spill(extra)


def _spill(details: dict[str, Any]) -> str | None:
    path = details.get("output_path")
    return path if details.get("truncated") and isinstance(path, str) else None


def _keep_output(rec: Recording, output: str, spilled: str | None) -> str | None:
    """The whole output as `check_output.txt` (run-directory relative): the bash tool's spill file when it cut
    the output (masked as it was written), else the output it kept whole; None when it cannot be written."""
    target = rec.run_dir / CHECK_OUTPUT
    if spilled is not None:
        with contextlib.suppress(OSError):
            os.replace(spilled, target)  # out of outputs/: spill files expire, the check's record does not
            return CHECK_OUTPUT
        return Path(spilled).relative_to(rec.run_dir).as_posix() if Path(spilled).is_relative_to(rec.run_dir) \
            else None
    masker = rec.masker
    try:
        write_atomic(target, masker.mask(output)[0] if masker is not None else output)
    except OSError:
        return None
    return CHECK_OUTPUT
