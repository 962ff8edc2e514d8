"""bench/bench_solve.py's task set is coherent (issue 44, item 5): at least eight chores, each with a `check:`; on
its fresh workspace each one is not yet done — its check fails — so a solve is the agent's work, and its reference
fix passes. The benchmark itself needs a real model and is not part of the suite."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("bench_solve", ROOT / "bench" / "bench_solve.py")
assert _spec and _spec.loader
bench_solve = importlib.util.module_from_spec(_spec)
sys.modules["bench_solve"] = bench_solve  # dataclasses look their module up by name
_spec.loader.exec_module(bench_solve)
TASKS = bench_solve.load_tasks()


def test_there_are_at_least_eight_tasks_each_with_a_check():
    assert len(TASKS) >= 8
    assert all(task.check.startswith("python3 ") for task in TASKS)


@pytest.mark.parametrize("task", TASKS, ids=[t.name for t in TASKS])
def test_each_check_fails_on_its_fresh_workspace(task, tmp_path):
    bench_solve.make(task, tmp_path)
    solved, why = bench_solve.objective(task, tmp_path)
    assert not solved and why.startswith("check exit 1"), why
    for rel, lines in task.keep.items():  # what must survive is there to begin with
        assert all(line in (tmp_path / rel).read_text() for line in lines), rel
    for rel, text in task.solution.items():  # and a fix is solved
        (tmp_path / rel).write_text(text)
    assert bench_solve.objective(task, tmp_path) == (True, "check passes")
