"""`--model replay:RUN_DIR`: the assistant messages of a recorded run, in order, no network."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from runner.core.events import Event, ModelResponse, RunStarted
from runner.core.outcome import ModelError, UsageError
from runner.model.base import ModelReply
from runner.record.logged import parse_event
from runner.record.rundir import read_events


class ReplayModel:
    """`agent`: a subagent's replies (by its id in the recording; children start in the same order when the
    run is replayed), else the run's own agent's."""

    def __init__(self, run_dir: Path, agent: str | None = None) -> None:
        log = run_dir / "events.jsonl"
        if not log.is_file():
            raise UsageError(f"replay: {log} not found")
        try:
            events = [parse_event(record) for record in read_events(log)]
        except ValueError as exc:
            raise UsageError(f"replay: {log} is not valid JSON lines: {exc}") from None
        self.name = f"replay:{run_dir}"
        self.source = run_dir
        self._replies = [ModelReply(e.message, e.usage or {}, e.finish_reason)
                         for e in events if isinstance(e, ModelResponse) and (e.agent or {}).get("id") == agent]
        self._next = 0
        self._started = next((e for e in events if isinstance(e, RunStarted)), None)

    def differences(self, task_sha256: str, policy_json: Path) -> list[str]:
        """How this run differs from the recording, in what the replies were given for: the task (by its
        sha256) and the policy (the snapshots, without the rules every run adds for its own directories)."""
        out = []
        recorded_task = self._started.task_sha256 if self._started is not None else None
        if recorded_task and recorded_task != task_sha256:
            out.append(f"the task differs from the recording's (sha256 {task_sha256[:12]}… here, "
                       f"{str(recorded_task)[:12]}… in {self.source})")
        try:
            recorded = json.loads((self.source / "policy.json").read_text(encoding="utf-8"))
            current = json.loads(policy_json.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return out
        if _comparable(recorded) != _comparable(current):
            out.append(f"the policy differs from the recording's ({self.source / 'policy.json'})")
        return out

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, turn: int,
                 emit: Callable[[Event], None], timeout: float | None = None,
                 tool_choice: str | dict[str, Any] | None = None) -> ModelReply:
        if self._next >= len(self._replies):
            raise ModelError(f"replay recording ran out after {len(self._replies)} responses ({self.source})")
        reply = self._replies[self._next]
        self._next += 1
        return reply


def _comparable(snapshot: Any) -> Any:
    """A policy.json as the replies were given for: its rules and sections, not where its files were. The
    rules of no file (the run's own outputs, the hard limits) name the run's directories and differ between
    any two runs; a file's rules are compared by their place in the extends chain, not by its path (the
    same policy in another checkout, or recorded before paths were recorded relative, is the same)."""
    if not isinstance(snapshot, dict):
        return snapshot
    data = dict(snapshot)
    files = [str(f) for f in data.pop("files", None) or []]
    permission = data.get("permission")
    if isinstance(permission, dict) and isinstance(permission.get("rules"), list):
        def kept(rule: dict[str, Any]) -> dict[str, Any]:
            source = str(rule.get("source"))
            return {**rule, "source": f"file {files.index(source)}"} if source in files else rule

        permission = dict(permission)
        permission["rules"] = [kept(r) for r in permission["rules"] if isinstance(r, dict)
                               and (str(r.get("source")) in files or r.get("source") == "--approve")]
        data["permission"] = permission
    if isinstance(data.get("narrowed_by"), list):
        data["narrowed_by"] = [_comparable(d) for d in data["narrowed_by"]]
    return data
