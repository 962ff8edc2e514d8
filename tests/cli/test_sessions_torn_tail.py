"""A killed run whose events.jsonl ends in a torn line (SIGKILL or the OOM killer mid-append) is resumed and
replayed from its last whole line, through the real CLI; a sealed run with a torn tail is still refused.

The killed state is made cheaply: a finished run loses its summary.json (never sealed, as a SIGKILL leaves it)
and gets a 48 MiB partial line appended as a sparse hole, the size of the event whose append was cut short.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.fakes.openai_server import reply

TORN = 48 << 20
HEAD = b'{"agent":null,"bytes":50331648,"call_id":"call_2_0","output":"'


def _tear(log: Path) -> int:
    """Append a torn line: a record's start, then a hole (read back as NULs, no newline). Its size in bytes."""
    with log.open("ab") as f:
        f.write(HEAD)
        f.truncate(f.tell() + TORN - len(HEAD))
    return TORN


def _state(log: Path) -> tuple[int, int]:
    st = log.stat()
    return st.st_size, st.st_mtime_ns


def _started(run_dir: Path) -> dict:
    return next(e for e in _events(run_dir) if e["type"] == "run_started")


def _events(run_dir: Path) -> list[dict]:
    return [json.loads(x) for x in (run_dir / "events.jsonl").read_text(encoding="utf-8").splitlines()]


def test_a_torn_last_line_is_left_out_by_resume_and_replay_and_refused_when_sealed(fake, workspace, agent_run):
    fake.add(reply(calls=[("write", {"path": "x.txt", "content": "x"})]), reply("could not write"))
    denied = agent_run("--policy", "strict", "task.md")
    assert denied.code == 3, denied.stderr
    run_dir = denied.run_dir
    log = run_dir / "events.jsonl"
    whole = log.stat().st_size
    torn = _tear(log)

    # Sealed: summary.json's head says where the log ends; bytes after it were written after the run.
    sealed = agent_run("resume", str(run_dir))
    assert sealed.code == 2 and "the last line is incomplete" in sealed.stderr, sealed.stderr
    assert sealed.new_dirs == []

    (run_dir / "summary.json").unlink()  # never sealed: what a SIGKILL leaves
    before = _state(log)
    fake.add(reply("resumed after the torn line"))
    resumed = agent_run("resume", str(run_dir), "--policy", "strict")
    assert resumed.code == 0, resumed.stderr
    assert resumed.summary["status"] == "success" and resumed.summary["resumed_from"]["status"] == "killed"
    assert _started(resumed.run_dir)["torn_tail_bytes"] == torn
    warnings = [e for e in _events(resumed.run_dir) if e["type"] == "warning"]
    assert [w["code"] for w in warnings] == ["torn_tail"] and str(torn) in warnings[0]["message"]
    assert f"incomplete line ({torn} bytes" in resumed.stderr
    assert fake.requests[-1]["messages"][-1]["role"] == "user"  # the conversation went on from the whole lines

    replayed = agent_run("replay", str(run_dir), "--approve", "--policy", "strict")
    assert replayed.code == 0, replayed.stderr
    assert replayed.summary["status"] == "success" and (workspace / "x.txt").read_text() == "x"
    assert _started(replayed.run_dir)["torn_tail_bytes"] == torn
    assert [e["code"] for e in _events(replayed.run_dir) if e["type"] == "warning"] == ["torn_tail"]
    assert _state(log) == before  # the original run is never modified

    # A whole log: torn_tail_bytes is null. Then the torn line goes, so the log checks at teardown.
    os.truncate(log, whole)
    fake.add(reply("whole"))
    again = agent_run("resume", str(run_dir), "--policy", "strict", "--force")
    assert again.code == 0, again.stderr
    assert _started(again.run_dir)["torn_tail_bytes"] is None
