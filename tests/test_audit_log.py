"""runner/record/audit.py: nothing is written once the log is closed (a late event from a call left running on a
daemon thread must never reach whatever file reuses the descriptor's number)."""

from __future__ import annotations

import json
import os

from runner.core.events import ToolCall, ToolResult
from runner.record.audit import AuditLog


def _call(call_id: str) -> ToolCall:
    return ToolCall(turn=1, call_id=call_id, tool="read", arguments="{}")


def _result(call_id: str) -> ToolResult:
    return ToolResult(call_id=call_id, tool="read", ok=True, error_type=None, bytes=0, sha256="", duration_s=0.0)


def test_a_call_ending_after_close_writes_nothing_to_a_reused_descriptor(tmp_path):
    audit = AuditLog(tmp_path / "audit.jsonl")
    audit(_call("call_1_0"))
    audit.close()  # the run stopped under call_1_0: its one line, `interrupted`
    other = tmp_path / "other"
    fd = os.open(other, os.O_WRONLY | os.O_CREAT, 0o644)  # likely the audit log's old number
    try:
        audit(_call("call_2_0"))
        audit(_result("call_2_0"))
        audit(_result("call_1_0"))
    finally:
        os.close(fd)
    assert other.read_bytes() == b""
    lines = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    assert [(x["call_id"], x["outcome"]) for x in lines] == [("call_1_0", "interrupted")]
