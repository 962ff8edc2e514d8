"""A task's `check`: a shell command run after the agent finishes, under the same policy,
through the same call hooks (decided, executed, recorded). It decides pass/fail."""

from __future__ import annotations

import json
from typing import Any

from runner.core.events import Event, ToolResult
from runner.core.outcome import Status
from runner.engine.call import CallEnv, handle_call
from runner.engine.recorder import Recording
from runner.report.transcript import CHECK_CALL_ID, CHECK_TAIL_LINES, split_result, tail_lines

__all__ = ["CHECK_CALL_ID", "run_check"]


def run_check(command: str, env: CallEnv, rec: Recording, turn: int) -> tuple[Status, str | None] | None:
    """None when the check passed; else the run's new ending."""
    seen: list[ToolResult] = []

    def capture(event: Event) -> None:
        if isinstance(event, ToolResult) and event.call_id == CHECK_CALL_ID:
            seen.append(event)

    rec.consumers.append(capture)
    call = {"id": CHECK_CALL_ID, "type": "function",
            "function": {"name": "bash", "arguments": json.dumps({"command": command})}}
    try:
        handle_call(call, env, turn, rec.emit)
    finally:
        rec.consumers.remove(capture)
    result = seen[-1]
    details: dict[str, Any] = result.details
    rec.extra["check"] = {"command": command, "ok": result.ok, "error_type": result.error_type,
                          "exit_code": details.get("exit_code")}
    if result.ok:
        return None
    # What a person debugging a red job reads first: stderr, the step summary, JUnit and the transcript
    # all read it from here (summary.json is masked).
    rec.extra["check"]["output_tail"] = tail_lines(split_result(result.content)[1], CHECK_TAIL_LINES)
    if result.error_type in ("ApprovalRequired", "ToolNotAllowed"):
        return Status.DENIED, f"the check `{command}` was not allowed by the policy"
    return Status.FAILED, f"the check `{command}` failed ({result.error_type}, exit code {details.get('exit_code')})"
