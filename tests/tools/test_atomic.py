from __future__ import annotations

import os
import stat

import pytest

from runner.record.atomic import atomic_write


def test_creates_a_file_with_the_umask_mode(tmp_path):
    old = os.umask(0o022)
    try:
        atomic_write(tmp_path / "new.txt", b"hello")
    finally:
        os.umask(old)
    assert (tmp_path / "new.txt").read_bytes() == b"hello"
    assert stat.S_IMODE((tmp_path / "new.txt").stat().st_mode) == 0o644


@pytest.mark.parametrize("mode", [0o640, 0o755, 0o600])
def test_replacing_keeps_permission_bits(tmp_path, mode):
    f = tmp_path / "f"
    f.write_bytes(b"old")
    f.chmod(mode)
    atomic_write(f, b"new")
    assert f.read_bytes() == b"new"
    assert stat.S_IMODE(f.stat().st_mode) == mode


def test_a_reader_of_the_old_file_never_sees_the_new_bytes(tmp_path):
    f = tmp_path / "f"
    f.write_bytes(b"old content")
    with f.open("rb") as reader:
        atomic_write(f, b"new")
        # The old file was replaced, not truncated and rewritten in place.
        assert reader.read() == b"old content"
    assert f.read_bytes() == b"new"


def test_failure_leaves_no_temp_file_and_the_target_untouched(tmp_path):
    target = tmp_path / "d"
    target.mkdir()
    (target / "x").write_bytes(b"keep")
    with pytest.raises(OSError):
        atomic_write(target, b"data")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d"]
    assert [p.name for p in target.iterdir()] == ["x"]


def test_missing_parent_raises_and_creates_nothing(tmp_path):
    with pytest.raises(FileNotFoundError):
        atomic_write(tmp_path / "no" / "f", b"x")
    assert list(tmp_path.iterdir()) == []


def test_long_file_name(tmp_path):
    # The temp name must not exceed the 255-byte limit the final name already nearly reaches.
    f = tmp_path / ("n" * 250)
    atomic_write(f, b"x")
    assert f.read_bytes() == b"x"
    assert [p.name for p in tmp_path.iterdir()] == ["n" * 250]


def test_empty_content(tmp_path):
    f = tmp_path / "f"
    f.write_bytes(b"something")
    atomic_write(f, b"")
    assert f.read_bytes() == b""
