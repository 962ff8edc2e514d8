"""The shard rule: which tasks of a batch one machine of N runs (`batch --shard I/N|auto`).

Pure functions. Every machine of a CI matrix gets the same task arguments (the same checkout, the same
glob), but a shell may list a glob in its locale's order, so the batch's order is the arguments sorted
by code point: task k (0-based) of that order belongs to shard `k mod N + 1`. Round-robin rather than
contiguous blocks, so that tasks that sort together (one directory's, often alike in cost) spread over
the machines. The hash of the whole sorted list is recorded with each shard, so a merge can tell shards
of different batches apart.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from runner.core.jsonutil import sha256_json
from runner.core.shown import shown

SHARD_ENV = "AGENT_RUN_SHARD"
# What names one batch across its machines, first set wins: GitHub's run (not its attempt: a re-run of the failed
# jobs merges with the first attempt's shards), GitLab's pipeline, else the caller's own.
BATCH_ID_ENVS = ("GITHUB_RUN_ID", "CI_PIPELINE_ID", "AGENT_RUN_BATCH_ID")
MAX_SHARDS = 10_000  # far above any CI's parallel jobs; a merge lists the missing ones, so it stays bounded


class ShardError(ValueError):
    """A shard spec that names no shard (exit 2: the CI job is misconfigured, not a task's fault)."""


@dataclass(frozen=True)
class Shard:
    index: int  # 1-based, as CI systems number their parallel jobs
    total: int


def task_order(tasks: Iterable[str]) -> list[str]:
    """The batch's task order: the paths as given, sorted by code point of the text the records show (the same
    on every machine, and for `batch-merge`, which has only that text: a name that is not UTF-8 as `\\xNN`)."""
    return sorted(tasks, key=shown)


def shard_of(position: int, total: int) -> int:
    """The 1-based shard that runs the task at 0-based `position` of the batch's order."""
    return position % total + 1


def cut(tasks: Sequence[str], shard: Shard) -> list[str]:
    """The tasks `shard` runs, in the batch's order. Over all indexes 1..total the cuts partition the
    sorted list: every task in exactly one shard (a task given twice is two tasks, as in `batch`)."""
    return [t for k, t in enumerate(task_order(tasks)) if shard_of(k, shard.total) == shard.index]


def tasks_sha256(tasks: Sequence[str]) -> str:
    """sha256 of the canonical JSON of the sorted task list (JSON, not joined lines: a path may hold a
    newline), as the records show the names (runner/core/shown.py): batch.json holds that text."""
    return sha256_json([shown(t) for t in task_order(tasks)])


def batch_id(environ: Mapping[str, str]) -> str | None:
    """The shard's batch identity (BATCH_ID_ENVS), or None when none is set."""
    return next((environ[name] for name in BATCH_ID_ENVS if environ.get(name)), None)


def parse(spec: str) -> Shard:
    """`I/N` with 1 <= I <= N."""
    index_text, sep, total_text = spec.strip().partition("/")
    try:
        index, total = int(index_text), int(total_text)
    except ValueError:
        index = total = 0
    if not sep or not 1 <= total <= MAX_SHARDS or not 1 <= index <= total:
        raise ShardError(f"{spec!r} is not a shard: write I/N, 1 <= I <= N <= {MAX_SHARDS:,} (e.g. 2/4)")
    return Shard(index, total)


def resolve(spec: str, environ: Mapping[str, str]) -> Shard:
    """`I/N`, or `auto`: GitLab's CI_NODE_INDEX/CI_NODE_TOTAL (1-based, `parallel:`), else AGENT_RUN_SHARD
    (`I/N`, e.g. set from an Actions matrix). `auto` with neither is refused, not taken as "all": a job
    that meant to run a quarter would run everything, on every machine."""
    if spec.strip() != "auto":
        return parse(spec)
    index, total = environ.get("CI_NODE_INDEX"), environ.get("CI_NODE_TOTAL")
    if index or total:
        try:
            return parse(f"{index}/{total}")
        except ShardError:
            raise ShardError(f"--shard auto: CI_NODE_INDEX={index!r} and CI_NODE_TOTAL={total!r} name no "
                             "shard (both are needed, 1 <= index <= total)") from None
    given = environ.get(SHARD_ENV, "").strip()
    if given and given != "auto":
        try:
            return parse(given)
        except ShardError as exc:
            raise ShardError(f"--shard auto: {SHARD_ENV}: {exc}") from None
    raise ShardError(f"--shard auto: neither CI_NODE_INDEX/CI_NODE_TOTAL (GitLab parallel:) nor {SHARD_ENV}=I/N "
                     "is set")
