"""Spill files: streamed output kept whole on disk, bounded in memory, cleaned up by age."""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

from runner.tools.spill import Spill, fallback_dir, remove_older_than, spill_text
from runner.tools.truncate import Limits


def test_stream_keeps_the_whole_output_on_disk_and_bounded_windows(tmp_path):
    spill = Spill(tmp_path / "outputs", window=1000)
    data = b"".join(f"line {i}\n".encode() for i in range(100_000))
    for i in range(0, len(data), 4096):
        spill.write(data[i:i + 4096])
    assert len(spill.head) == 1000 and len(spill.tail) == 1000
    text, details = spill.finish(Limits(100, 1000), from_end=True)
    assert details["truncated"] and details["bytes"] == len(data) and details["lines"] == 100_000
    assert details["sha256"] == hashlib.sha256(data).hexdigest()
    on_disk = (tmp_path / "outputs" / os.path.basename(details["output_path"])).read_bytes()
    assert on_disk == data
    assert text.endswith("line 99999\n") and "line 0\n" not in text
    preview = text.split("\n\n", 1)[1]
    assert preview.startswith("line ") and len(preview.encode()) <= 1000  # whole lines: no partial first line


def test_small_stream_leaves_no_file(tmp_path):
    spill = Spill(tmp_path / "outputs", window=1000)
    spill.write(b"hello\n")
    text, details = spill.finish(Limits(), from_end=True)
    assert text == "hello\n" and details["truncated"] is False
    assert list((tmp_path / "outputs").iterdir()) == []


def test_head_mode_cuts_at_a_line_end(tmp_path):
    spill = Spill(tmp_path / "o", window=25)
    spill.write(b"aaaa\nbbbb\ncccc\ndddd\neeee\nffff\n")
    text, details = spill.finish(Limits(100, 25), from_end=False)
    assert text.startswith("aaaa\nbbbb\ncccc\ndddd\neeee\n\n...") and details["bytes"] == 30


def test_spill_text_only_writes_when_cut(tmp_path):
    out, details = spill_text(tmp_path / "o", "x\n" * 10, Limits(20, 1000), from_end=False)
    assert out == "x\n" * 10 and "output_path" not in details and not (tmp_path / "o").exists()
    out, details = spill_text(tmp_path / "o", "x\n" * 30, Limits(20, 1000), from_end=False)
    assert details["truncated"] and Path(details["output_path"]).read_text() == "x\n" * 30
    assert "...10 lines truncated..." in out


def test_first_spill_removes_old_spill_files_of_other_runs(tmp_path):
    runs = tmp_path / "runs"
    old = runs / "r1" / "outputs" / "tool_old"
    old.parent.mkdir(parents=True)
    old.write_text("old")
    past = time.time() - 8 * 86400
    os.utime(old, (past, past))
    fresh = runs / "r1" / "outputs" / "tool_fresh"
    fresh.write_text("new")
    spill_text(runs / "r2" / "outputs", "y\n" * 3000, Limits(ttl_days=7), from_end=False)
    assert not old.exists() and fresh.exists()


def test_remove_older_than_runs_and_dry_run(tmp_path):
    runs = tmp_path / "runs"
    for name, age_days in (("old", 10), ("new", 1)):
        (runs / name).mkdir(parents=True)
        (runs / name / "summary.json").write_text("{}")
        t = time.time() - age_days * 86400
        os.utime(runs / name / "summary.json", (t, t))
    assert remove_older_than(runs, 7 * 86400, spills_only=False, dry_run=True) == [runs / "old"]
    assert (runs / "old").exists()
    assert remove_older_than(runs, 7 * 86400, spills_only=False) == [runs / "old"]
    assert not (runs / "old").exists() and (runs / "new").exists()


TOKEN = b"ghp_" + b"Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"


def test_a_masking_stream_writes_masked_bytes_and_gives_the_model_the_real_ones(tmp_path):
    from runner.record.mask import Masker

    data = (b"\xff\xfe raw bytes, " + "é".encode() + TOKEN + b"\n" + b"filler line\n" * 40_000) * 3 + TOKEN
    spill = Spill(tmp_path / "outputs", window=1000, masker=Masker({}))
    for i in range(0, len(data), 4093):  # cuts through the tokens and through the two bytes of é
        spill.write(data[i:i + 4093])
    text, details = spill.finish(Limits(100, 1000), from_end=True)
    assert text.endswith(TOKEN.decode()), "the model reads what the command printed"
    assert details["sha256"] == hashlib.sha256(data).hexdigest() and details["bytes"] == len(data)
    on_disk = Path(details["output_path"]).read_bytes()
    assert on_disk == data.replace(TOKEN, b"[REDACTED:github-token]")


def test_a_masking_stream_that_is_not_cut_leaves_no_file(tmp_path):
    from runner.record.mask import Masker

    spill = Spill(tmp_path / "outputs", window=1000, masker=Masker({}))
    spill.write(TOKEN)
    text, details = spill.finish(Limits(), from_end=True)
    assert text == TOKEN.decode() and details["truncated"] is False
    assert list((tmp_path / "outputs").iterdir()) == []


def test_spill_text_masks_the_file_only(tmp_path):
    from runner.record.mask import Masker

    text = "x\n" * 30 + TOKEN.decode()
    out, details = spill_text(tmp_path / "o", text, Limits(20, 1000), from_end=True, masker=Masker({}))
    assert out.endswith(TOKEN.decode())
    assert Path(details["output_path"]).read_text() == "x\n" * 30 + "[REDACTED:github-token]"
    assert details["sha256"] == hashlib.sha256(text.encode()).hexdigest()


def test_when_outputs_cannot_be_written_spills_go_to_runner_temp_and_say_so(tmp_path, monkeypatch):
    """Issue 34 item 3: nothing cut is lost when the run directory's outputs/ cannot be written."""
    temp = tmp_path / "runner_temp"
    temp.mkdir()
    monkeypatch.setenv("RUNNER_TEMP", str(temp))
    outputs = tmp_path / "run" / "outputs"
    outputs.parent.mkdir()
    outputs.write_text("not a directory")
    spill = Spill(outputs, window=100)
    spill.write(b"y\n" * 500)
    text, details = spill.finish(Limits(10, 100), from_end=True)
    where = Path(details["output_path"])
    assert where.parent == fallback_dir(outputs) and where.parent.parent == temp
    assert where.read_bytes() == b"y\n" * 500 and details["spill_fallback"] and str(where) in text
    assert (where.parent.stat().st_mode & 0o777) == 0o700
    _, details = spill_text(outputs, "z\n" * 30, Limits(20, 1000), from_end=False)
    assert Path(details["output_path"]).parent == fallback_dir(outputs) and details["spill_fallback"]


def test_a_spill_that_fails_mid_stream_moves_whole_to_the_fallback(tmp_path, monkeypatch):
    monkeypatch.setenv("RUNNER_TEMP", str(tmp_path))
    spill = Spill(tmp_path / "outputs", window=100)
    spill.write(b"a\n" * 100)
    real = spill._file
    assert real is not None

    class Full:
        closed = False

        def write(self, data):
            raise OSError(28, "No space left on device")

        def close(self):
            real.close()

    spill._file = Full()
    spill.write(b"b\n" * 100)
    _, details = spill.finish(Limits(10, 100), from_end=True)
    assert Path(details["output_path"]).read_bytes() == b"a\n" * 100 + b"b\n" * 100
    assert "No space left" in details["spill_fallback"] and not list((tmp_path / "outputs").iterdir())


def test_a_fallback_directory_that_is_not_private_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("RUNNER_TEMP", str(tmp_path))
    outputs = tmp_path / "outputs"
    outputs.write_text("a file")
    fallback_dir(outputs).mkdir(mode=0o777)
    fallback_dir(outputs).chmod(0o777)
    spill = Spill(outputs, window=10)
    spill.write(b"x\n" * 100)
    _, details = spill.finish(Limits(10, 10), from_end=True)
    assert details["output_path"] is None and "not a private directory" in details["spill_error"]


def test_cleanup_clears_the_fallback_directory_too(tmp_path, monkeypatch):
    """Spills that outputs/ could not take are removed with their run, or when old, like those in outputs/."""
    monkeypatch.setenv("RUNNER_TEMP", str(tmp_path / "temp"))
    (tmp_path / "temp").mkdir()
    runs = tmp_path / "runs"
    old_t = time.time() - 10 * 86400
    for name in ("old", "new"):
        (runs / name).mkdir(parents=True)
        (runs / name / "summary.json").write_text("{}")
        where = fallback_dir(runs / name / "outputs")
        where.mkdir(mode=0o700)
        for spill in ("tool_old", "tool_new"):
            (where / spill).write_text("cut")
        os.utime(where / "tool_old", (old_t, old_t))
    os.utime(runs / "old" / "summary.json", (old_t, old_t))
    new_fallback = fallback_dir(runs / "new" / "outputs")
    assert remove_older_than(runs, 7 * 86400, spills_only=False) == [new_fallback / "tool_old", runs / "old"]
    assert not fallback_dir(runs / "old" / "outputs").exists()
    assert [p.name for p in new_fallback.iterdir()] == ["tool_new"]
