"""A line of a run's events.jsonl that no reader should hold or recurse into (issue 42, item 8): one JSON line
nested thousands of levels deep, one longer than any line the writer makes, a huge torn tail. Every reader goes
through runner/record/jsonl.py, with its line cap (MAX_LINE_BYTES, the writer's own) and depth cap (200):
`runs list` and `runs show` leave such a line out with a warning naming it; `replay`, `resume` and `fork`, which
verify the hash chain, refuse the run (exit 2) naming the line. The long lines are sparse holes: no disk, and
read back as NULs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from runner.record.jsonl import MAX_LINE_BYTES
from tests.cli.test_runs_show import _PEAK, PEAK_MIB
from tests.conftest import clean_env
from tests.fakes.openai_server import reply

DEEP = ('{"type":"warning","x":' + "[" * 100_000 + "]" * 100_000 + "}\n").encode()
HANG_S = 120


def _insert(log: Path, line: bytes, at: int) -> None:
    """`line` as line `at` (1-based) of the log: the lines after it are kept."""
    lines = log.read_bytes().splitlines(keepends=True)
    log.write_bytes(b"".join(lines[:at - 1]) + line + b"".join(lines[at - 1:]))


def _insert_long(log: Path, length: int, at: int) -> None:
    """A line of `length` bytes (a record's start, then a hole, then its newline) as line `at`."""
    lines = log.read_bytes().splitlines(keepends=True)
    with log.open("wb") as f:
        f.write(b"".join(lines[:at - 1]))
        head = b'{"type":"tool_result","output":"'
        f.write(head)
        f.seek(f.tell() + length - len(head) - 3)  # the hole: no disk
        f.write(b'"}\n')
        f.write(b"".join(lines[at - 1:]))


def _a_run(fake, agent_run) -> Path:
    fake.add(reply(calls=[("list", {})]), reply("listed"))
    r = agent_run("task.md", timeout=HANG_S)
    assert r.code == 0, r.stderr
    return r.run_dir


def test_bad_lines_are_left_out_by_runs_list_and_show_with_a_warning(fake, workspace, agent_run):
    run_dir = _a_run(fake, agent_run)
    (run_dir / "summary.json").unlink()  # as a killed run leaves it: `runs list` reads the events then
    log = run_dir / "events.jsonl"
    whole = log.read_bytes()
    _insert_long(log, MAX_LINE_BYTES + 1, 3)
    _insert(log, DEEP, 3)  # line 3 deep, line 4 long
    listed = agent_run("runs", "list", timeout=HANG_S)
    assert listed.code == 0 and run_dir.name in listed.stdout, listed.stderr
    shown = agent_run("runs", "show", str(run_dir), timeout=HANG_S)
    assert shown.code == 0, shown.stderr
    assert "tool calls (1)" in shown.stdout and "list" in shown.stdout
    told = agent_run("runs", "show", "--transcript", str(run_dir), timeout=HANG_S)
    assert told.code == 0 and "listed" in told.stdout, told.stderr
    for r in (listed, shown, told):
        assert f"{run_dir.name}/events.jsonl:3: nested deeper than 200 levels: left out" in r.stderr, r.stderr
        assert (f"{run_dir.name}/events.jsonl:4: longer than {MAX_LINE_BYTES:,} bytes ({MAX_LINE_BYTES + 1:,}): "
                "left out") in r.stderr, r.stderr
        assert "Traceback" not in r.stderr
    log.write_bytes(whole)  # the log checks at teardown (tests/conftest.py)


@pytest.mark.parametrize("kind", ["deep", "long"])
def test_replay_resume_and_fork_refuse_a_bad_line_naming_it(fake, workspace, agent_run, kind):
    run_dir = _a_run(fake, agent_run)
    log = run_dir / "events.jsonl"
    whole = log.read_bytes()
    if kind == "deep":
        _insert(log, DEEP, 4)
    else:
        _insert_long(log, MAX_LINE_BYTES + 1, 4)
    why = "nested deeper than 200 levels" if kind == "deep" else f"longer than {MAX_LINE_BYTES:,} bytes"
    for args in (("replay", str(run_dir), "--approve"), ("resume", str(run_dir), "go on"),
                 ("fork", str(run_dir), "try again")):
        r = agent_run(*args, timeout=HANG_S)
        assert r.code == 2, (args, r.stderr)
        assert f"events.jsonl:4: {why}" in r.stderr and "Traceback" not in r.stderr, (args, r.stderr)
        assert r.new_dirs == [], args
    log.write_bytes(whole)


def test_a_huge_torn_tail_costs_runs_list_and_show_no_memory(fake, workspace, agent_run, tmp_path):
    # A run killed in the middle of writing a 256 MiB event (twice the line cap; a sparse hole): the readers measure
    # the tail without holding it, each child's peak RSS (wait4) stays that of the CLI (it was the tail's size, or
    # several times it, before).
    run_dir = _a_run(fake, agent_run)
    (run_dir / "summary.json").unlink()
    log = run_dir / "events.jsonl"
    whole = log.stat().st_size
    with log.open("ab") as f:
        f.write(b'{"type":"tool_result","output":"')
        f.truncate(whole + (2 * MAX_LINE_BYTES))
    out = [(["runs", "list", "--workspace", str(workspace)], str(tmp_path / "list.txt")),
           (["runs", "show", str(run_dir)], str(tmp_path / "show.txt"))]
    proc = subprocess.run([sys.executable, "-c", _PEAK, json.dumps(out), str(HANG_S)], capture_output=True,
                          text=True, env=clean_env(), timeout=3 * HANG_S)
    got = json.loads(proc.stdout)
    assert [g["code"] for g in got] == [0, 0], proc.stderr
    assert all(g["peak_kib"] < PEAK_MIB * 1024 for g in got), got
    assert run_dir.name in (tmp_path / "list.txt").read_text()
    assert "tool calls (1)" in (tmp_path / "show.txt").read_text()
    assert "left out" not in proc.stderr  # a killed run's torn tail is its normal state, not news
    with log.open("ab") as f:
        f.truncate(whole)
