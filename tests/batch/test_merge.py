"""Shards' outputs read as untrusted input and merged: only a regular batch.json under its cap and of the
expected shape counts; a task's summary.json adds detail only from a real directory named by a plain run id."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from runner.batch import merge as merging
from runner.batch.merge import MergeRefused, NotReported, ShardOutput, merge, read_output
from runner.batch.shard import Shard, cut, tasks_sha256

TASKS = ["a.md", "b.md", "c.md"]


def _write(directory: Path, index: int, total: int = 2, listed: list[str] | None = None, **extra: Any) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    mine = cut(listed or TASKS, Shard(index, total))
    entries = [{"task": t, "status": "success", "exit_code": 0, "run_id": f"run-{t}", "run_dir": f"/elsewhere/{t}",
                "duration_s": 1.5, "turns": 2, "reason": None, "worktree": None} for t in mine]
    data = {"exit_code": 0, "tasks": entries,
            "shard": {"index": index, "total": total, "tasks_sha256": tasks_sha256(listed or TASKS)}, **extra}
    (directory / "batch.json").write_text(json.dumps(data))
    return directory


def test_all_shards_merge_in_the_batch_order(tmp_path):
    outs = [read_output(_write(tmp_path / str(i), i)) for i in (2, 1)]
    merged = merge([o for o in outs if isinstance(o, ShardOutput)])
    result = merged.result()
    assert [(t["task"], t["shard"]) for t in result["tasks"]] == [("a.md", 1), ("b.md", 2), ("c.md", 1)]
    assert result["exit_code"] == 0 and result["shards"]["missing"] == []


def test_a_missing_index_is_a_failure(tmp_path):
    out = read_output(_write(tmp_path / "1", 1, total=3))
    assert isinstance(out, ShardOutput)
    merged = merge([out])
    assert merged.missing == [2, 3] and merged.exit_code == 1


def test_other_lists_and_counts_and_twice_are_refused(tmp_path):
    one = read_output(_write(tmp_path / "1", 1))
    for other in (read_output(_write(tmp_path / "x", 2, listed=["a.md", "z.md"])),
                  read_output(_write(tmp_path / "y", 2, total=3)), read_output(_write(tmp_path / "z", 1))):
        assert isinstance(one, ShardOutput) and isinstance(other, ShardOutput)
        with pytest.raises(MergeRefused):
            merge([one, other])
    with pytest.raises(MergeRefused):
        merge([])


@pytest.mark.parametrize("bad", [
    {"shard": None}, {"shard": {"index": 3, "total": 2, "tasks_sha256": "0" * 64}},
    {"shard": {"index": 1, "total": 10**9, "tasks_sha256": "0" * 64}},
    {"shard": {"index": True, "total": 2, "tasks_sha256": "0" * 64}}, {"exit_code": 256}, {"tasks": {}},
    {"tasks": [{"task": 1, "status": "success", "exit_code": 0}]}, {"tasks": [{"task": "a.md", "status": "success"}]},
])
def test_a_batch_json_of_the_wrong_shape_is_no_report(tmp_path, bad):
    out = read_output(_write(tmp_path / "1", 1, **bad))
    assert isinstance(out, NotReported), out


def test_not_a_regular_file_or_over_the_cap_is_no_report(tmp_path, monkeypatch):
    real = _write(tmp_path / "real", 1)
    link = tmp_path / "link"
    link.mkdir()
    (link / "batch.json").symlink_to(real / "batch.json")
    assert "unreadable" in read_output(link).why  # type: ignore[union-attr]
    monkeypatch.setattr(merging, "BATCH_JSON_CAP", 10)
    assert "over" in read_output(real).why  # type: ignore[union-attr]


def test_a_summary_is_read_only_from_a_plain_run_directory(tmp_path):
    directory = _write(tmp_path / "1", 1)
    (directory / "run-a.md").mkdir()
    (directory / "run-a.md" / "summary.json").write_text(json.dumps(
        {"title": "Task A", "status": "failed", "exit_code": 1, "turns": "many"}))
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "summary.json").write_text(json.dumps({"title": "planted"}))
    os.symlink(outside, directory / "run-c.md")
    out = read_output(directory)
    assert isinstance(out, ShardOutput)
    a, c = out.summaries
    # The title comes from summary.json, the verdict from the batch's entry; a wrong-typed field is dropped.
    assert a["title"] == "Task A" and (a["status"], a["exit_code"], a["turns"]) == ("success", 0, 2)
    assert "title" not in c  # a symlinked run directory is not followed
