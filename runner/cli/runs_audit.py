"""`agent-run runs show --audit`: audit.jsonl (runner/record/audit.py), one row per tool call."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from runner.cli.runs_format import Layout, cell, clip, duration
from runner.record.audit import AUDIT_FILE
from runner.record.jsonl import iter_events

HEADERS = ["seq", "call", "agent", "tool", "risk", "decision", "scope", "rule", "outcome", "exit", "bytes",
           "duration", "targets", "met"]


def audit_records(run_dir: Path) -> Callable[[], Iterator[dict[str, Any]]] | None:
    """The run's audit records, in file order, read afresh at each call and never held (a line that is not a JSON
    object is left out); None: the run has no audit.jsonl (it was recorded before there was one)."""
    path = run_dir / AUDIT_FILE
    return (lambda: iter_events(path)) if path.is_file() else None


def audit_table(records: Callable[[], Iterable[dict[str, Any]]]) -> Iterator[str]:
    """The table, from two readings of the records: the columns' widths, then the lines."""
    layout = Layout.of(HEADERS, map(_row, records()))
    yield layout.line(HEADERS)
    for r in records():
        yield layout.line(_row(r))


def audit_json(records: Iterable[dict[str, Any]]) -> Iterator[str]:
    """`json.dumps(list(records), indent=2, sort_keys=True, ensure_ascii=False)`, record by record."""
    first = True
    for r in records:
        item = json.dumps(r, indent=2, sort_keys=True, ensure_ascii=False).replace("\n", "\n  ")
        yield ("[\n  " if first else ",\n  ") + item
        first = False
    yield "[]" if first else "\n]"


def _row(r: dict[str, Any]) -> list[str]:
    return [cell(r.get("seq")), cell(r.get("call_id")), cell(r.get("agent")), cell(r.get("tool")),
            cell(r.get("risk")), cell(r.get("decision")), cell(r.get("approval_scope")), cell(r.get("rule")),
            cell(r.get("error_type") or r.get("outcome")), cell(r.get("exit_code")), cell(r.get("output_bytes")),
            duration(r.get("duration_s")), clip(_targets(r.get("targets")), 60), clip(_met(r.get("met")), 120)]


def _targets(targets: Any) -> str:
    if not isinstance(targets, list):
        return "-"
    return ", ".join(str(t.get("target")) for t in targets if isinstance(t, dict)) or "-"


def _met(met: Any) -> str:
    """What the call met while it ran: each target with the policy's decision on it (`-`: nothing, or a record
    from before audit.jsonl had `met`)."""
    if not isinstance(met, list):
        return "-"
    return ", ".join(f"{m.get('target')} {m.get('decision')}" for m in met if isinstance(m, dict)) or "-"
