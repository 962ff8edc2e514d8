"""runner/mcp/stdio.py's reader: lines split over many chunks, many lines in one chunk, and the line limit."""

from __future__ import annotations

import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from runner.mcp import stdio
from runner.mcp.boundedlog import BoundedLog
from runner.mcp.stdio import ProcessState, stdio_transport

# Writes `count` JSON-RPC notifications: the first with a `size`-byte payload dribbled out in small
# writes (a pipe then hands the reader many small chunks), the rest all in one write.
WRITER = textwrap.dedent("""
    import json, os, sys
    size, count = int(sys.argv[1]), int(sys.argv[2])
    first = json.dumps({"jsonrpc": "2.0", "method": "notifications/message",
                        "params": {"level": "info", "data": "x" * size}}).encode() + b"\\n"
    rest = b"".join(json.dumps({"jsonrpc": "2.0", "method": "notifications/message",
                                "params": {"level": "info", "data": i}}).encode() + b"\\n" for i in range(1, count))
    for i in range(0, len(first), 4096):
        os.write(1, first[i:i + 4096])
    os.write(1, rest)
    sys.stdin.read()
""")


def _read(log: Path, size: int, count: int) -> tuple[list[Any], ProcessState, float]:
    state = ProcessState()
    got: list[Any] = []

    async def main() -> None:
        argv = [sys.executable, "-c", WRITER, str(size), str(count)]
        with open(log, "ab") as file:
            async with stdio_transport(argv, {}, None, BoundedLog(file), state) as (read_stream, _write):
                with anyio.fail_after(60):
                    async for message in read_stream:  # type: ignore[attr-defined]
                        got.append(message)
                        if len(got) == count:
                            break

    started = time.monotonic()
    anyio.run(main)
    return got, state, time.monotonic() - started


def test_a_long_line_in_many_chunks_then_many_lines_at_once(tmp_path: Path) -> None:
    size = 30 * 1024 * 1024  # just under MAX_LINE
    got, state, _elapsed = _read(tmp_path / "log", size, 50)
    assert len(got) == 50 and not state.garbage
    assert len(got[0].message.params["data"]) == size
    assert [m.message.params["data"] for m in got[1:]] == list(range(1, 50))
    # Its speed is not asserted (machines here are noisy): linear, ~0.5 s here, where re-copying and re-scanning
    # the whole buffer for each chunk took ~9 s; the read's own fail_after(60) catches a blow-up.


def test_a_line_over_the_limit_ends_the_connection(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stdio, "MAX_LINE", 100_000)
    got, state, _elapsed = _read(tmp_path / "log", 200_000, 1)
    assert got == []  # the stream ended without a message
    assert state.garbage == ["<a line over 100000 bytes>"]
    assert "longer than 100000 bytes" in (tmp_path / "log").read_text()


def test_a_log_just_past_its_limit_keeps_its_whole_tail(tmp_path: Path) -> None:
    # Past HEAD + TAIL by less than TAIL: the tail written at close begins before the limit.
    path = tmp_path / "log"
    stream = b"".join(b"%04d\n" % i * 200 for i in range(25))  # 25,000 bytes in 1,000-byte writes
    with open(path, "ab") as file:
        log = BoundedLog(file, head=10_000, tail=10_000)
        for i in range(0, len(stream), 1000):
            log.write(stream[i:i + 1000])
        log.close()
    assert path.read_bytes() == stream[:10_000] + b"[agent-run: 5000 bytes dropped]\n" + stream[-10_000:]
