from __future__ import annotations

import errno
import hashlib
import json
import re
import time

import pytest

from runner.core.events import ModelRetry, RunStarted
from runner.core.jsonutil import canonical
from runner.record.rundir import EventLog, create_run_dir, new_run_id, read_events, utc_now, write_atomic, write_json

RUN_ID = re.compile(r"^\d{8}T\d{12}Z-[0-9a-f]{6}$")


def test_run_id_format():
    assert RUN_ID.match(new_run_id())


def test_run_ids_unique():
    ids = [new_run_id() for _ in range(2000)]
    assert len(set(ids)) == len(ids)


def test_run_ids_sort_by_time():
    ids = []
    for _ in range(5):
        ids.append(new_run_id())
        # More than the id's microsecond resolution, so the time prefix differs.
        time.sleep(0.002)
    assert sorted(ids) == ids


def test_utc_now_format():
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", utc_now())


def test_write_atomic_leaves_no_temp_files(tmp_path):
    target = tmp_path / "summary.json"
    write_atomic(target, "first")
    write_atomic(target, "second ✓")
    assert target.read_text(encoding="utf-8") == "second ✓"
    assert [p.name for p in tmp_path.iterdir()] == ["summary.json"]


def test_write_atomic_failure_keeps_old_file_and_cleans_up(tmp_path, monkeypatch):
    target = tmp_path / "summary.json"
    write_atomic(target, "intact")

    def full(_fd: int) -> None:  # the disk fills as the temp file is synced: the write fails midway
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr("runner.record.atomic.os.fsync", full)
    with pytest.raises(OSError):
        write_atomic(target, "broken")
    assert target.read_text(encoding="utf-8") == "intact"
    assert [p.name for p in tmp_path.iterdir()] == ["summary.json"]


def test_write_json_is_stable(tmp_path):
    write_json(tmp_path / "a.json", {"b": 1, "a": "é"})
    assert (tmp_path / "a.json").read_text(encoding="utf-8") == '{\n  "a": "é",\n  "b": 1\n}\n'


def test_event_log_lines(tmp_path):
    path = tmp_path / "events.jsonl"
    log = EventLog(path, "run-1")
    log(RunStarted(version="0.1.0", model="m", policy="p", mode="agent", workspace="/w", task_sha256="ab",
                   max_turns=3, timeout_s=1.5))
    log(ModelRetry(turn=1, attempt=2, error="HTTP 503 — ünïcode", delay_s=0.5))
    # Flushed per event: readable before close.
    lines = path.read_text(encoding="utf-8").splitlines()
    log.close()
    assert len(lines) == 2
    for line in lines:
        assert line == canonical(json.loads(line))
    first, second = (json.loads(line) for line in lines)
    assert [first["seq"], second["seq"]] == [1, 2]
    assert {first["run_id"], second["run_id"]} == {"run-1"}
    assert [first["type"], second["type"]] == ["run_started", "model_retry"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", first["ts"])
    assert second == {"seq": 2, "ts": second["ts"], "run_id": "run-1", "type": "model_retry",
                      "prev": hashlib.sha256(lines[0].encode()).hexdigest(), "agent": None,
                      "turn": 1, "attempt": 2, "error": "HTTP 503 — ünïcode", "delay_s": 0.5, "requested_s": None}
    assert first["prev"] == "0" * 64 and log.head == hashlib.sha256(lines[1].encode()).hexdigest()
    assert "ünïcode" in lines[1]
    assert read_events(path) == [first, second]


def test_event_log_appends(tmp_path):
    path = tmp_path / "events.jsonl"
    path.write_text('{"seq":0}\n', encoding="utf-8")
    log = EventLog(path, "r")
    log(ModelRetry(turn=1, attempt=1, error="e", delay_s=0.0))
    log.close()
    assert [e["seq"] for e in read_events(path)] == [0, 1]


def test_create_run_dir_under_state_dir_writes_gitignore(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    run_id, path = create_run_dir(ws / ".agent-run" / "runs", ws)
    assert RUN_ID.match(run_id)
    assert path == ws / ".agent-run" / "runs" / run_id
    assert path.is_dir() and list(path.iterdir()) == []
    assert (ws / ".agent-run" / ".gitignore").read_text(encoding="utf-8") == "*\n"


def test_create_run_dir_keeps_existing_gitignore(tmp_path):
    ws = tmp_path / "ws"
    (ws / ".agent-run").mkdir(parents=True)
    (ws / ".agent-run" / ".gitignore").write_text("custom\n")
    create_run_dir(ws / ".agent-run" / "runs", ws)
    assert (ws / ".agent-run" / ".gitignore").read_text() == "custom\n"


@pytest.mark.parametrize("where", ["outside", "in-workspace"])
def test_create_run_dir_elsewhere_writes_no_state(tmp_path, where):
    ws = tmp_path / "ws"
    ws.mkdir()
    runs = tmp_path / "runs" if where == "outside" else ws / "ci-runs"
    run_id, path = create_run_dir(runs, ws)
    assert path == runs / run_id and path.is_dir()
    assert not (ws / ".agent-run").exists()


def test_create_run_dir_twice_gives_two_dirs(tmp_path):
    first = create_run_dir(tmp_path / "runs", tmp_path)
    second = create_run_dir(tmp_path / "runs", tmp_path)
    assert first[0] != second[0]
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == sorted([first[0], second[0]])


def test_file_sha256_reads_only_a_regular_file_in_chunks(tmp_path):
    """A run's log can name any path for resume to hash (run_started.inputs): a FIFO would block the resume and
    /dev/zero would never end, so only a regular file is read — anything else is an OSError at once."""
    import hashlib
    import os

    from runner.core.jsonutil import file_sha256

    data = tmp_path / "mcp.json"
    data.write_bytes(b"x" * (3 << 20))
    assert file_sha256(data) == hashlib.sha256(b"x" * (3 << 20)).hexdigest()
    assert file_sha256(tmp_path / "missing") is None
    os.mkfifo(tmp_path / "fifo")  # no writer: a blocking open would wait for good
    from pathlib import Path

    for path in (tmp_path / "fifo", Path("/dev/zero"), tmp_path):
        with pytest.raises(OSError):
            file_sha256(path)


def test_a_closed_event_log_writes_nothing_not_even_into_a_file_that_reused_its_descriptor(tmp_path):
    # A straggler (a call or child left on a daemon thread when the run ended on its clock) may emit after the
    # log is closed: the line must not land in whatever file now has the old descriptor's number.
    import os

    log = EventLog(tmp_path / "events.jsonl", "r1")
    log(ModelRetry(turn=1, attempt=1, error="before close", delay_s=0.0))
    fd = log._fd
    log.close()
    other = os.open(tmp_path / "other.txt", os.O_WRONLY | os.O_CREAT, 0o644)  # likely takes the same number
    try:
        log(ModelRetry(turn=1, attempt=2, error="after close", delay_s=0.0))
    finally:
        os.close(other)
    assert (tmp_path / "other.txt").read_bytes() == b"" and other in (fd, other)
    assert len(read_events(tmp_path / "events.jsonl")) == 1


def test_event_log_refuses_an_event_no_reader_would_take_and_stays_whole(tmp_path):
    """The writer enforces the readers' depth cap (record/jsonl.py): an event nested past it is not written, the
    run is told (EventRefused, a `failed` outcome), and the next event follows the last one written."""
    from runner.core.outcome import Failed
    from runner.record.rundir import EventRefused

    path = tmp_path / "events.jsonl"
    log = EventLog(path, "r")
    log(ModelRetry(turn=1, attempt=1, error="e", delay_s=0.0))
    deep: list = []
    for _ in range(250):
        deep = [deep]
    with pytest.raises(EventRefused, match="run_started event nested deeper than 200 levels") as refused:
        log(RunStarted(version="0", model="m", policy="p", mode="agent", workspace="/w", task_sha256="ab",
                       max_turns=3, timeout_s=1.5, model_params={"logit_bias": deep}))
    assert isinstance(refused.value, Failed)
    log(ModelRetry(turn=2, attempt=1, error="e", delay_s=0.0))
    log.close()
    records = read_events(path)
    assert [e["seq"] for e in records] == [1, 2]
    assert records[1]["prev"] == hashlib.sha256(path.read_text().splitlines()[0].encode()).hexdigest()
