"""audit.jsonl: one record per tool call, for a compliance review that should not have to join
`tool_call`, `permission_decision` and `tool_result` by hand.

A consumer of the run's events (runner/engine/recorder.py): a call's events — its `tool_call`, its own
`permission_decision` and those it met while it ran (`met`), its `tool_result` — are folded into one
line, written when its `tool_result` is (the end of runner/engine/call.py finish, in the model's order); a
call the run stopped under (an interrupt, an internal error) has no result and is written by `close`, when
the run is being recorded as ended, with outcome `interrupted`. So every `tool_call` of the log has exactly
one line. Events reach consumers one at a time under the Recording's lock, whatever thread emitted them (a
worker running read-only calls, a child agent's), so nothing here locks. Each line is masked like the log
(runner/record/mask.py). Fields: runner/schemas/audit.schema.json; docs/run-directory.md.
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runner.core.events import (
    Event,
    HookFinished,
    PermissionDecision,
    ToolCall,
    ToolResult,
    agent_id,
    call_ref,
)
from runner.core.jsonutil import canonical
from runner.record.mask import Masker
from runner.record.rundir import utc_now  # the same clock as the log's `ts`

AUDIT_FILE = "audit.jsonl"
DENIALS = frozenset({"ApprovalRequired", "ToolNotAllowed"})


@dataclass
class _Open:
    """A call between its `tool_call` and its `tool_result`."""

    record: dict[str, Any]
    since: float  # time.monotonic() at its tool_call
    decided: bool = False


@dataclass
class AuditLog:
    path: Path
    masker: Masker | None = None
    seq: int = 0
    broken: bool = False  # a write failed (a full disk: events.jsonl says why), or closed: nothing more is written
    _open: dict[tuple[str, str], list[_Open]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def __call__(self, event: Event) -> None:
        if self.broken:  # closed, or a write failed: a late event (a call left running on a daemon thread) adds nothing
            return
        key = (agent_id(event), getattr(event, "call_id", ""))
        if isinstance(event, ToolCall):
            self._open.setdefault(key, []).append(_Open(_opened(event), time.monotonic()))
        elif isinstance(event, PermissionDecision):
            # The call's own decision is its first; later ones under the same call are what it met while it ran
            # (a redirect, a command's connection): each in `met`, and one denied there denies the call, as
            # summary.json counts it (PermissionDecision.denied).
            opened = self._open.get(key, [])
            pending = next((o for o in opened if not o.decided), None)
            if pending is not None:
                pending.decided = True
                pending.record.update(_decided(event))
            elif running := next((o for o in opened if o.decided), None):
                running.record["met"].extend(_met(event))
                if event.denied:
                    running.record["decision"] = event.decision
        elif isinstance(event, HookFinished) and event.call_id:
            # The hooks that judged the call (PreToolUse, PostToolUse) in its line; a line without hooks has none.
            if judged := self._open.get(key):
                judged[0].record.setdefault("hooks", []).append(
                    {"event": event.event, "command": event.command, "exit_code": event.exit_code,
                     "decision": event.decision, "error": event.error})
        elif isinstance(event, ToolResult):
            queue = self._open.get(key)
            if queue:
                pending = queue.pop(0)
                pending.record.update(_ended(event, pending.record))
                self._write(pending.record)

    def close(self) -> None:
        """The calls the run stopped under, each written once, in the order they began; then the file closed."""
        pending = sorted((o for queue in self._open.values() for o in queue), key=lambda o: o.since)
        self._open.clear()
        for o in pending:
            o.record.update(outcome="interrupted", duration_s=round(time.monotonic() - o.since, 4))
            self._write(o.record)
        self.broken = True  # nothing is written after this: the descriptor's number may already be another file's
        with contextlib.suppress(OSError):
            os.close(self._fd)

    def _write(self, record: dict[str, Any]) -> None:
        if self.broken:
            return
        self.seq += 1
        line = {"seq": self.seq, **record}
        if self.masker is not None:
            line = self.masker.mask_obj(line)[0]
        data = (canonical(line) + "\n").encode("utf-8", "backslashreplace")
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(self._fd, view):]
        except OSError:
            self.broken = True


def _opened(event: ToolCall) -> dict[str, Any]:
    return {"call_id": call_ref(event.agent, event.call_id), "agent": agent_id(event), "tool": event.tool,
            "targets": [], "met": [], "risk": None, "decision": None, "rule": None, "approval_scope": None,
            "started": utc_now(), "duration_s": None, "outcome": None, "error_type": None, "error_class": None,
            "exit_code": None,
            "output_bytes": None, "output_sha256": None, "spill_path": None}


def _decided(event: PermissionDecision) -> dict[str, Any]:
    targets = [{k: t[k] for k in ("domain", "target", "decision", "risk") if k in t} for t in event.targets]
    return {"targets": targets, "risk": event.risk, "decision": event.decision, "rule": rule_ref(event.rule),
            "approval_scope": event.approval_scope}


def _met(event: PermissionDecision) -> list[dict[str, Any]]:
    """What a running call met, one entry per target of a later decision under it, as the policy decided each."""
    return [{"domain": t.get("domain"), "target": t.get("target"), "decision": t.get("decision"),
             "risk": t.get("risk"), "rule": rule_ref(t.get("rule"))} for t in event.targets]


def _ended(event: ToolResult, record: dict[str, Any]) -> dict[str, Any]:
    details = event.details or {}
    # A command that went on after a refused connection may exit 0: the call is still denied in part.
    denied = event.error_type in DENIALS or record["decision"] == "deny"
    exit_code = details.get("exit_code")
    spill = details.get("output_path")
    return {"duration_s": event.duration_s, "outcome": "denied" if denied else "ok" if event.ok else "error",
            "error_type": event.error_type, "error_class": event.error_class,
            "exit_code": exit_code if isinstance(exit_code, int) else None,
            "output_bytes": event.bytes, "output_sha256": event.sha256,
            "spill_path": str(spill) if spill else None}


def rule_ref(rule: dict[str, Any] | None) -> str | None:
    """The rule that decided as `file:line` (a shipped policy by name, a workspace file relative to its root, as
    the log names it); a rule with no line (an `--approve`, a hard limit, a rule read back from a snapshot)
    as `file#index`."""
    if not rule:
        return None
    return f"{rule.get('file')}:{rule['line']}" if rule.get("line") else f"{rule.get('file')}#{rule.get('index')}"
