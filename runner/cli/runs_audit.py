"""`agent-run runs show --audit`: audit.jsonl (runner/record/audit.py), one row per tool call."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from runner.cli.runs_format import cell, clip, duration, table
from runner.record.audit import AUDIT_FILE
from runner.record.jsonl import iter_events

HEADERS = ["seq", "call", "agent", "tool", "risk", "decision", "scope", "rule", "outcome", "exit", "bytes",
           "duration", "targets"]


def audit_records(run_dir: Path) -> list[dict[str, Any]] | None:
    """The run's audit records, in file order (a line that is not a JSON object is left out); None: the run has
    no audit.jsonl (it was recorded before there was one)."""
    path = run_dir / AUDIT_FILE
    return list(iter_events(path)) if path.is_file() else None


def audit_table(records: list[dict[str, Any]]) -> list[str]:
    rows = [[cell(r.get("seq")), cell(r.get("call_id")), cell(r.get("agent")), cell(r.get("tool")),
             cell(r.get("risk")), cell(r.get("decision")), cell(r.get("approval_scope")), cell(r.get("rule")),
             cell(r.get("error_type") or r.get("outcome")), cell(r.get("exit_code")), cell(r.get("output_bytes")),
             duration(r.get("duration_s")), clip(_targets(r.get("targets")), 60)] for r in records]
    return table(HEADERS, rows)


def _targets(targets: Any) -> str:
    if not isinstance(targets, list):
        return "-"
    return ", ".join(str(t.get("target")) for t in targets if isinstance(t, dict)) or "-"
