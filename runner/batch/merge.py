"""`batch-merge`: the batch.json files of a batch's shards (`batch --shard I/N`) made into one result.

The shards' outputs come from other machines, as artifacts: they are input, not configuration. Each
batch.json is read only as a regular file (no symlink, no FIFO) up to a cap, and only its expected shape
is taken; a task's summary.json beside it (in the uploaded runs directory), read the same way, only adds
detail to the JUnit case and the annotations. Nothing in them widens what the merge writes: the files go
under --out, whatever a shard claims.

The rule: shards of one batch agree on the batch they ran in (`batch_id`: the CI run's or pipeline's id, so
a report an earlier run left is not taken), on the list they were cut from (`tasks_sha256`) and on how many
there are; otherwise the merge is refused (exit 2). An index of 1..total that no output reports is a
failure naming it (its tasks are unknown); with every shard there, each one's tasks must be exactly its
cut of the list the hash names, so a merged result is the unsharded batch's.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeGuard

from runner.batch.result import ENTRY_FIELDS, worst
from runner.batch.shard import MAX_SHARDS, Shard, cut, task_order, tasks_sha256
from runner.report.summary_file import read_summary
from runner.workspace.repofile import read_capped

BATCH_JSON = "batch.json"
BATCH_JSON_CAP = 32 << 20  # ~50,000 tasks' entries
SUMMARY_CAP = 4 << 20  # a task's summary.json; bigger is taken as absent (the entry still counts)
MISSING_EXIT = 1  # a shard that never reported: `failed`, so the batch is at least that
_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")
_SHA256 = re.compile(r"[0-9a-f]{64}")


class MergeRefused(ValueError):
    """Outputs that are not shards of one batch (exit 2)."""


@dataclass(frozen=True)
class ShardOutput:
    """One shard's batch.json, checked: its place in the batch and its tasks' entries and summaries."""

    dir: Path
    shard: Shard
    tasks_sha256: str
    batch_id: str | None  # GITHUB_RUN_ID, CI_PIPELINE_ID or AGENT_RUN_BATCH_ID where the shard ran
    exit_code: int
    entries: list[dict[str, Any]]
    summaries: list[dict[str, Any]]  # per entry: its summary.json (when uploaded) under the entry's values


@dataclass(frozen=True)
class NotReported:
    """A directory that holds no usable batch.json (a shard job that died before writing it)."""

    dir: Path
    why: str


@dataclass
class Merged:
    total: int
    tasks_sha256: str
    outputs: list[ShardOutput]
    missing: list[int]
    batch_id: str | None = None
    tasks: list[str] = field(default_factory=list)
    summaries: list[dict[str, Any]] = field(default_factory=list)
    entries: list[dict[str, Any]] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        codes = [int(s["exit_code"]) for s in self.summaries] + [o.exit_code for o in self.outputs]
        return max(worst(codes), MISSING_EXIT if self.missing else 0)

    def result(self) -> dict[str, Any]:
        """batch.json of the whole batch: the tasks in the batch's order, each naming its shard."""
        return {"exit_code": self.exit_code, "tasks": self.entries,
                "shards": {"total": self.total, "tasks_sha256": self.tasks_sha256, "batch_id": self.batch_id,
                           "missing": self.missing,
                           "reported": [{"index": o.shard.index, "dir": str(o.dir), "exit_code": o.exit_code}
                                        for o in self.outputs]}}


def read_output(directory: Path) -> ShardOutput | NotReported:
    """DIR/batch.json as a shard's output, or why it is none."""
    try:
        head, size, _ = read_capped(directory / BATCH_JSON, BATCH_JSON_CAP, digest=False)
    except FileNotFoundError:
        return NotReported(directory, f"no {BATCH_JSON}")
    except OSError as exc:
        return NotReported(directory, f"{BATCH_JSON} unreadable ({exc.strerror or exc})")
    if size > BATCH_JSON_CAP:
        return NotReported(directory, f"{BATCH_JSON} is over {BATCH_JSON_CAP >> 20} MiB")
    try:
        data = json.loads(head.decode("utf-8"))
    except (ValueError, RecursionError):
        return NotReported(directory, f"{BATCH_JSON} is not JSON")
    return _shard_output(directory, data)


def _shard_output(directory: Path, data: Any) -> ShardOutput | NotReported:
    record = data.get("shard") if isinstance(data, dict) else None
    if not isinstance(record, dict):
        return NotReported(directory, f"{BATCH_JSON} is not a shard's (no `shard`: run `batch --shard I/N`)")
    index, total, digest = record.get("index"), record.get("total"), record.get("tasks_sha256")
    identity = record.get("batch_id")
    if not (_int(index) and _int(total) and 1 <= total <= MAX_SHARDS and 1 <= index <= total
            and isinstance(digest, str) and _SHA256.fullmatch(digest)
            and (identity is None or (isinstance(identity, str) and len(identity) <= 200))):
        return NotReported(directory, f"{BATCH_JSON}: `shard` is not {{index, total, tasks_sha256, batch_id}}")
    tasks = data.get("tasks")
    if not _exit(data.get("exit_code")) or not isinstance(tasks, list):
        return NotReported(directory, f"{BATCH_JSON} has no exit_code and tasks")
    entries = [_entry(t) for t in tasks]
    if any(e is None for e in entries):
        return NotReported(directory, f"{BATCH_JSON}: a task's entry is not {{task, status, exit_code, …}}")
    checked = [e for e in entries if e is not None]
    return ShardOutput(directory, Shard(index, total), digest, identity, data["exit_code"], checked,
                       [_summary(directory, e) for e in checked])


def merge(outputs: Sequence[ShardOutput]) -> Merged:
    """One result of the shards' outputs. MergeRefused when they are not all of one batch and one cut, when
    a shard is given twice, or when, all there, their tasks are not the list they claim."""
    if not outputs:
        raise MergeRefused("no shard's batch.json among the directories given")
    first = outputs[0]
    by_index: dict[int, ShardOutput] = {}
    for out in outputs:
        if out.batch_id != first.batch_id:
            raise MergeRefused(f"{out.dir / BATCH_JSON} is shard {out.shard.index}/{out.shard.total} of batch "
                               f"{out.batch_id!r}, {first.dir / BATCH_JSON} of batch {first.batch_id!r}: a report "
                               "left by another run (GITHUB_RUN_ID, CI_PIPELINE_ID or AGENT_RUN_BATCH_ID differ)")
        if (out.tasks_sha256, out.shard.total) != (first.tasks_sha256, first.shard.total):
            raise MergeRefused(f"{out.dir / BATCH_JSON} is shard {out.shard.index}/{out.shard.total} of another "
                               f"batch than {first.dir / BATCH_JSON} (shard {first.shard.index}/{first.shard.total}): "
                               "their task lists (tasks_sha256) or shard counts differ")
        if out.shard.index in by_index:
            raise MergeRefused(f"shard {out.shard.index}/{out.shard.total} is given twice: "
                               f"{by_index[out.shard.index].dir / BATCH_JSON} and {out.dir / BATCH_JSON}")
        by_index[out.shard.index] = out
    total = first.shard.total
    merged = Merged(total, first.tasks_sha256, [by_index[i] for i in sorted(by_index)],
                    [i for i in range(1, total + 1) if i not in by_index], first.batch_id)
    rows = sorted(((e["task"], o.shard.index, e, s) for o in merged.outputs
                   for e, s in zip(o.entries, o.summaries, strict=True)), key=lambda r: (r[0], r[1]))
    merged.tasks = [task for task, *_ in rows]
    merged.entries = [{**e, "shard": index} for _, index, e, _ in rows]
    merged.summaries = [s for *_, s in rows]
    if not merged.missing:
        _check_cuts(merged)
    return merged


def _check_cuts(merged: Merged) -> None:
    if tasks_sha256(merged.tasks) != merged.tasks_sha256:
        raise MergeRefused("the shards' tasks together are not the list they were cut from (tasks_sha256)")
    for out in merged.outputs:
        if task_order(e["task"] for e in out.entries) != cut(merged.tasks, out.shard):
            raise MergeRefused(f"{out.dir}: shard {out.shard.index}/{out.shard.total} holds other tasks than its "
                               "cut of the batch")


def _entry(data: Any) -> dict[str, Any] | None:
    """A task's entry, only its known fields and only of their types; None when it is not one."""
    if not (isinstance(data, dict) and isinstance(data.get("task"), str) and isinstance(data.get("status"), str)
            and _exit(data.get("exit_code"))):
        return None
    kept = {k: data.get(k) for k in ENTRY_FIELDS}
    for key in ("run_dir", "run_id", "reason", "worktree"):
        if not isinstance(kept[key], str):
            kept[key] = None
    if not _int(kept["turns"]):
        kept["turns"] = None
    if not (isinstance(kept["duration_s"], int | float) and not isinstance(kept["duration_s"], bool)):
        kept["duration_s"] = None
    return kept


def _summary(directory: Path, entry: Mapping[str, Any]) -> dict[str, Any]:
    """The task's summary for its JUnit case and annotations: its summary.json when the shard uploaded its
    runs directory (DIR/<run_id>/, a real directory), under the entry's own values (the batch's word on
    how the task ended, e.g. killed after it printed a summary)."""
    own = {k: v for k, v in entry.items() if k != "worktree"}
    run_id = entry.get("run_id")
    if not (isinstance(run_id, str) and _RUN_ID.fullmatch(run_id)):
        return own
    run_dir = directory / run_id
    try:
        if not stat.S_ISDIR(os.lstat(run_dir).st_mode):
            return own
    except OSError:
        return own
    return {**(read_summary(run_dir, SUMMARY_CAP) or {}), **own}


def _int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _exit(value: Any) -> bool:
    return _int(value) and 0 <= value <= 255
