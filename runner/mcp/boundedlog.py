"""An MCP server's log file, bounded: a server's stderr (and our notes about it) may be any size, the file is not.

Everything written goes to the file as it comes until the file would pass HEAD + TAIL bytes; from then on only
the last TAIL bytes are kept, in memory (a bytearray trimmed from the front: bounded, and cheap, as CPython's
bytearray deletes from the front without copying); they are kept from the first write, as the tail written at
close may begin before the limit, which the write-only file cannot give back. At close the file is cut back
to its first HEAD bytes and gets the line `[agent-run: N bytes dropped]` and the kept tail: the start of a
server's log (its banner, the first error) and its end (what it said before it died) are what a reader looks
for. A log that never grew past the limit is written through, so `tail -f` works during a run for every ordinary server.

Masked (given the run's masker) like every file of the run directory, line by line (runner/record/mask.py
MaskedLines): a line the server has not ended waits for its end, or for `flush_line` when its stderr closes.
`recent` is what was written, masked.

Thread-safe: the server's reader writes from the MCP loop thread, close() comes from any thread.
"""

from __future__ import annotations

import codecs
import contextlib
import threading
from typing import IO

from runner.record.mask import MaskedLines, Masker

HEAD_BYTES = 512 * 1024
# The last 512 KiB less room for the marker line, so that the whole file stays within 1 MiB.
TAIL_BYTES = 512 * 1024 - 128
RECENT_BYTES = 4096  # what an error message may quote of the end (McpServer._stderr_hint)


class BoundedLog:
    def __init__(self, file: IO[bytes], head: int = HEAD_BYTES, tail: int = TAIL_BYTES,
                 masker: Masker | None = None) -> None:
        self._file = file
        self._lines = MaskedLines(masker) if masker is not None else None
        self._decoder = codecs.getincrementaldecoder("utf-8")("surrogateescape")  # bytes back as they came
        self._head, self._tail_max = head, tail
        self._start = file.tell()  # an append-mode file may hold something already: it is not ours to cut
        self._total = 0  # bytes written to us
        self._tail = bytearray()  # the last _tail_max bytes written
        self._head_ends_line = True
        self._lock = threading.Lock()
        self._closed = False

    @property
    def dropped(self) -> int:
        return max(0, self._total - self._head - self._tail_max)

    def write(self, data: bytes) -> None:
        """Never raises for a full disk or a closed log: a server's noise must not break its connection."""
        if not data:
            return
        with self._lock:
            if self._closed:
                return
            if self._lines is not None:
                self._append(self._lines.feed(self._decoder.decode(data)).encode("utf-8", "surrogateescape"))
            else:
                self._append(data)

    def flush_line(self) -> None:
        """What waits for its line's end is written now: the stream it came from has ended."""
        with self._lock:
            if not self._closed:
                self._flush_line()

    def _flush_line(self) -> None:
        if self._lines is not None:
            rest = self._lines.feed(self._decoder.decode(b"", final=True)) + self._lines.end()
            self._decoder.reset()
            self._append(rest.encode("utf-8", "surrogateescape"))

    def _append(self, data: bytes) -> None:
        if not data:
            return
        before = self._total
        self._total += len(data)
        if before < self._head <= self._total:
            self._head_ends_line = data[self._head - before - 1:self._head - before] == b"\n"
        limit = self._head + self._tail_max
        if before < limit:
            with contextlib.suppress(OSError, ValueError):
                self._file.write(data[:limit - before])
                self._file.flush()
        self._tail += data
        if len(self._tail) > self._tail_max:
            del self._tail[:len(self._tail) - self._tail_max]

    def recent(self, size: int = RECENT_BYTES) -> bytes:
        """The last `size` bytes written (at most the tail's size)."""
        with self._lock:
            return bytes(self._tail[-size:])

    def close(self) -> None:
        """Cut the file back to its head, then the marker and the tail, if anything was dropped; idempotent."""
        with self._lock:
            if self._closed:
                return
            self._flush_line()
            self._closed = True
            dropped = self.dropped
            with contextlib.suppress(OSError, ValueError):
                if dropped:
                    self._file.truncate(self._start + self._head)
                    self._file.seek(0, 2)
                    sep = b"" if self._head_ends_line else b"\n"
                    self._file.write(sep + f"[agent-run: {dropped} bytes dropped]\n".encode() + bytes(self._tail))
                self._file.close()
            self._tail = bytearray()
