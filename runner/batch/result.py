"""batch.json: one entry per task, the batch's exit rule, and the atomic write both `batch` and
`batch-merge` use (docs/batch.md#batchjson)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from runner.record.rundir import write_json

# A task's fields in batch.json, all from what its run printed (its summary).
ENTRY_FIELDS = ("task", "run_dir", "run_id", "status", "exit_code", "duration_s", "turns", "reason", "worktree")


def entry(task: str, summary: Mapping[str, Any]) -> dict[str, Any]:
    worktree = summary.get("worktree")
    return {"task": task, "run_dir": summary.get("run_dir"), "run_id": summary.get("run_id"),
            "status": summary.get("status"), "exit_code": summary.get("exit_code"),
            "duration_s": summary.get("duration_s"), "turns": summary.get("turns"), "reason": summary.get("reason"),
            "worktree": worktree.get("path") if isinstance(worktree, dict) else worktree}


def worst(codes: Iterable[int]) -> int:
    """The batch's exit code: the worst (highest) of its tasks', 0 for none."""
    return max(codes, default=0)


def write_result(path: Path, result: Mapping[str, Any]) -> None:
    """Atomically (a CI step reading it never sees half a file), its directory made. OSError for the caller:
    the tasks have run, and their outcome (the exit code) matters more than this file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json(path, dict(result))
