from __future__ import annotations

import hashlib
import os
import random
import time

import pytest

from runner.engine.cancel import RunCancel
from runner.tools import read as read_module
from runner.tools.base import ToolContext, ToolError
from runner.tools.read import MAX_FILE_BYTES, MAX_LINE_BYTES, MAX_LINE_CHARS, Read


def run(ctx, **args):
    return Read().run(args, ctx)


def error(ctx, **args) -> ToolError:
    with pytest.raises(ToolError) as info:
        run(ctx, **args)
    return info.value


FIVE_SHA256 = hashlib.sha256(b"one\ntwo\nthree\nfour\nfive\n").hexdigest()  # of the whole file, whatever is shown


@pytest.fixture
def five(ws):
    (ws / "f.txt").write_text("one\ntwo\nthree\nfour\nfive\n", encoding="utf-8")
    return "f.txt"


def test_whole_file_numbered(ctx, five):
    out = run(ctx, path=five)
    assert out.content == "1\tone\n2\ttwo\n3\tthree\n4\tfour\n5\tfive"
    assert out.details == {"lines": 5, "shown": [1, 5], "file_sha256": FIVE_SHA256}


def test_offset_and_limit_with_more_hint(ctx, five):
    out = run(ctx, path=five, offset=2, limit=2)
    assert out.content == "2\ttwo\n3\tthree\n[lines 2-3 of 5; read with offset=4 for more]"
    assert out.details == {"lines": 5, "shown": [2, 3], "file_sha256": FIVE_SHA256}


def test_limit_reaching_the_end_has_no_hint(ctx, five):
    assert run(ctx, path=five, offset=4, limit=10).content == "4\tfour\n5\tfive"


def test_offset_past_the_end(ctx, five):
    assert run(ctx, path=five, offset=9).content == "[f.txt: 5 lines; nothing at offset 9]"


def test_last_line_without_newline(ctx, ws):
    (ws / "g.txt").write_text("a\nb", encoding="utf-8")
    assert run(ctx, path="g.txt").content == "1\ta\n2\tb"


def test_long_lines_are_cut(ctx, ws):
    (ws / "long.txt").write_text("x" * (MAX_LINE_CHARS + 50) + "\n", encoding="utf-8")
    content = run(ctx, path="long.txt").content
    assert content == "1\t" + "x" * MAX_LINE_CHARS + f"… [line cut at {MAX_LINE_CHARS} chars]"


def test_binary_file_is_io_error(ctx, ws):
    (ws / "b.bin").write_bytes(b"PK\x03\x04\x00\x00binary")
    err = error(ctx, path="b.bin")
    assert err.type == "IOError"
    assert "looks binary" in err.message


def test_directory_is_io_error(ctx, ws):
    (ws / "d").mkdir()
    err = error(ctx, path="d")
    assert err.type == "IOError"
    assert err.message == "d is a directory; use list"


def test_missing_file_is_io_error(ctx):
    err = error(ctx, path="nope.txt")
    assert err.type == "IOError"
    assert err.message.startswith("cannot read nope.txt")


def test_too_large_file(ctx, ws):
    # Sparse: the size is what is checked, no need to write 64 MiB.
    with (ws / "big.txt").open("wb") as f:
        f.truncate(MAX_FILE_BYTES + 1)
    err = error(ctx, path="big.txt")
    assert err.type == "FileTooLarge"


def test_invalid_utf8_is_replaced_not_fatal(ctx, ws):
    (ws / "latin1.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    assert run(ctx, path="latin1.txt").content == "1\tcaf\ufffd"


def test_targets(ctx, ws):
    assert [(t.domain, t.target) for t in Read().targets({"path": "src/a.py"}, ctx)] == [("read", "workspace:src/a.py")]
    assert [t.target for t in Read().targets({"path": "../x"}, ctx)] == [f"fs:{(ws.parent / 'x').as_posix()}"]


def _reference(data: bytes, offset: int, limit: int) -> tuple[list[str], int]:
    """What read shows, by the plainest means: the whole file split on newlines (CRLF as one)."""
    text = data.decode("utf-8", errors="replace")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    shown = []
    for number, line in enumerate(lines, start=1):
        if offset <= number < offset + limit:
            line = line.removesuffix("\r")
            if len(line) > MAX_LINE_CHARS:
                line = line[:MAX_LINE_CHARS] + f"… [line cut at {MAX_LINE_CHARS} chars]"
            shown.append(f"{number}\t{line}")
    return shown, len(lines)


@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 64, 1 << 20])
def test_chunked_reading_matches_reading_whole(ctx, ws, monkeypatch, chunk):
    monkeypatch.setattr(read_module, "CHUNK", chunk)
    rng = random.Random(chunk)
    pieces = ["a", "bc", "é", "日本", "\r\n", "\n", "\n", "x" * (MAX_LINE_CHARS - 1), "y" * (MAX_LINE_CHARS + 3),
              "日" * (MAX_LINE_BYTES // 3 + 2)]  # longer than what is kept of a line
    for case in range(30):
        data = "".join(rng.choice(pieces) for _ in range(rng.randrange(0, 12))).encode()
        (ws / "f.txt").write_bytes(data)
        offset, limit = rng.randrange(1, 5), rng.randrange(1, 6)
        out = run(ctx, path="f.txt", offset=offset, limit=limit)
        shown, total = _reference(data, offset, limit)
        assert out.details["lines"] == total, (case, data)
        assert [line for line in out.content.split("\n") if not line.startswith("[")] == shown, (case, data)


def test_a_giant_line_is_cut_without_being_held(ctx, ws):
    with (ws / "giant.txt").open("wb") as f:
        f.write(b"z" * (64 * 1024 * 1024) + b"\nsecond\n")
    out = run(ctx, path="giant.txt", limit=5)
    first, second = out.content.split("\n")
    assert first == "1\t" + "z" * MAX_LINE_CHARS + f"… [line cut at {MAX_LINE_CHARS} chars]"
    assert second == "2\tsecond"


def test_counting_stops_far_past_the_last_line_shown(ctx, ws, monkeypatch):
    monkeypatch.setattr(read_module, "COUNT_BYTES", 1000)
    monkeypatch.setattr(read_module, "CHUNK", 100)
    (ws / "long.txt").write_text("line\n" * 10_000)
    out = run(ctx, path="long.txt", limit=2)
    assert out.content.startswith("1\tline\n2\tline\n[lines 1-2 of more than ")
    assert out.content.endswith("; read with offset=3 for more]")
    assert out.details["lines_counted"] == "partial"
    assert run(ctx, path="long.txt", offset=9_999).content == "9999\tline\n10000\tline"


def test_a_fifo_is_not_opened(ctx, ws):
    os.mkfifo(ws / "pipe")
    err = error(ctx, path="pipe")
    assert err.type == "IOError"
    assert err.message == "pipe is not a regular file (a FIFO, socket or device); not read"


def test_a_run_out_of_time_stops_the_read(ws):
    (ws / "f.txt").write_text("x\n")
    ctx = ToolContext(workspace=ws, cancel=RunCancel(deadline=time.monotonic() - 1))
    err = error(ctx, path="f.txt")
    assert err.type == "Timeout"


def test_tail_lines_reads_the_last_lines_numbered(ctx, five):
    out = run(ctx, path=five, tail_lines=2)
    assert out.content == "4\tfour\n5\tfive" and out.details["shown"] == [4, 5]
    assert run(ctx, path=five, tail_lines=50).content.startswith("1\tone\n")
    assert error(ctx, path=five, tail_lines=2, offset=3).type == "InvalidArguments"


def test_max_lines_and_tail_lines_are_bounded_by_the_policys_limit(ctx, ws):
    from runner.tools.truncate import Limits

    (ws / "log.txt").write_text("".join(f"{i}\n" for i in range(1, 101)))
    ctx.truncation = Limits(max_lines=10)
    assert run(ctx, path="log.txt", max_lines=3).details["shown"] == [1, 3]
    assert run(ctx, path="log.txt", max_lines=50, offset=20).details["shown"] == [20, 29]
    assert run(ctx, path="log.txt", tail_lines=50).details["shown"] == [91, 100]


def test_file_sha256_is_of_the_whole_file_even_past_what_is_counted(ctx, ws, monkeypatch):
    monkeypatch.setattr(read_module, "COUNT_BYTES", 10)
    monkeypatch.setattr(read_module, "CHUNK", 16)
    data = "".join(f"line {i}\n" for i in range(1000)).encode()
    (ws / "big.txt").write_bytes(data)
    out = run(ctx, path="big.txt", limit=1)
    assert out.details["lines_counted"] == "partial"
    assert out.details["file_sha256"] == hashlib.sha256(data).hexdigest()
    monkeypatch.setattr(read_module, "HASH_BYTES", 100)
    assert run(ctx, path="big.txt", limit=1).details["file_sha256"] is None


def test_tail_lines_reads_the_file_once(ctx, ws, monkeypatch):
    """tail_lines counts (and hashes) the file in one pass, then reads again only from the chunk its last lines
    start in (issue 42, item 10): it read the whole file twice."""
    read_bytes = [0]
    real_open = read_module._open_regular

    class Counting:
        def __init__(self, f):
            self.f = f

        def read(self, n=-1):
            data = self.f.read(n)
            read_bytes[0] += len(data)
            return data

        def __getattr__(self, name):
            return getattr(self.f, name)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

    monkeypatch.setattr(read_module, "_open_regular", lambda path, shown: Counting(real_open(path, shown)))
    lines = [f"line {i} " + "x" * 90 for i in range(1, 60_001)]
    (ws / "big.log").write_text("\n".join(lines) + "\n")
    size = (ws / "big.log").stat().st_size
    out = run(ctx, path="big.log", tail_lines=3)
    assert out.content == "\n".join(f"{n}\t{lines[n - 1]}" for n in (59_998, 59_999, 60_000))
    assert out.details["lines"] == 60_000 and out.details["shown"] == [59_998, 60_000]
    assert out.details["file_sha256"] == hashlib.sha256((ws / "big.log").read_bytes()).hexdigest()
    assert size < read_bytes[0] <= size + read_module.CHUNK  # once, and the last lines' chunk again
    most = run(ctx, path="big.log", tail_lines=60_000)  # the policy's limit: a window across chunk boundaries
    first, last = most.details["shown"]
    assert last == 60_000 and most.content.splitlines() == [f"{n}\t{lines[n - 1]}" for n in range(first, 60_001)]
