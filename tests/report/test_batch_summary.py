"""The batch's step-summary table: one row per task, text from the runs defused, capped under a limit by
dropping rows (batch.json keeps them), and a merge's missing shards said first."""

from __future__ import annotations

import re

from runner.report.batch_summary import markdown, table


def _task(i: int, **extra: object) -> dict[str, object]:
    return {"task": f"tasks/t{i}.md", "status": "success", "exit_code": 0, "turns": 2, "duration_s": 1.25,
            "run_id": f"run-{i}", "reason": None, **extra}


def test_a_row_per_task_with_the_runs_text_defused():
    evil = {"task": "a|b`.md", "status": "denied", "exit_code": 3, "turns": None, "duration_s": "soon",
            "run_id": "r", "reason": "<img src=x> | **bold**\n## heading"}
    text = markdown({"exit_code": 3, "tasks": [_task(0), evil]})
    lines = text.splitlines()
    assert lines[0] == "## ❌ agent-run batch: 2 tasks (exit 3)"
    rows = [line for line in lines if line.startswith("| `")]
    assert len(rows) == 2 and all(row.count(" | ") == 6 for row in rows)  # no cell breaks the table
    assert re.search(r"(?<!\\)<img", text) is None and "\\<img" in text and "\n## heading" not in text
    assert "0.0s" in rows[1]  # a duration that is no number reads as none


def test_a_merge_names_its_missing_shards_and_the_shard_of_each_task():
    result = {"exit_code": 1, "tasks": [_task(0, shard=1)],
              "shards": {"total": 3, "missing": [2, 3], "reported": [{"index": 1}]}}
    text = markdown(result)
    assert "1 task, merged from 1 of 3 shards (exit 1)" in text
    assert "**Shard 2 of 3 never reported**" in text and "**Shard 3 of 3 never reported**" in text
    assert "| task | status | exit | turns | time | shard | run id | reason |" in text


def test_rows_are_dropped_from_the_end_under_the_limit():
    result = {"exit_code": 0, "tasks": [_task(i) for i in range(500)]}
    text = markdown(result, limit=4000)
    assert len(text.encode()) <= 4000 and "more task(s): see batch.json" in text
    assert "`tasks/t0.md`" in text and "`tasks/t499.md`" not in text


def test_the_terminal_table_aligns_and_survives_odd_values():
    lines = table(["a.md", "long-name.md"], [_task(0), {"status": "failed", "exit_code": 1, "turns": "x",
                                                        "duration_s": None, "reason": "no summary"}])
    assert [line.split()[:3] for line in lines] == [["task", "status", "exit"], ["a.md", "success", "0"],
                                                    ["long-name.md", "failed", "1"]]
    assert lines[2].endswith("no summary")
