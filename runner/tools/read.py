from __future__ import annotations

import hashlib
import io
import os
import stat
from pathlib import Path
from typing import Any, BinaryIO

from runner.policy.model import Target
from runner.tools import paths
from runner.tools.base import Tool, ToolContext, ToolError, ToolOutput
from runner.tools.truncate import positive
from runner.workspace import gitconfig

# Read in chunks, never whole: a 1 GiB spill file can be paged with offset/limit, and a 2 GB line costs
# a chunk of memory and a cut line.
MAX_FILE_BYTES = 16 * 1024 * 1024 * 1024
DEFAULT_LIMIT = 2000
MAX_LINE_CHARS = 2000
MAX_LINE_BYTES = 4 * MAX_LINE_CHARS  # enough for MAX_LINE_CHARS characters of any UTF-8 text
CHUNK = 1024 * 1024
BINARY_PROBE = 8192  # a NUL in the first bytes: not text
COUNT_BYTES = 64 * 1024 * 1024  # lines are counted this far past the last one shown, no further
SEEN_AS_BYTES = 4 * 1024 * 1024  # a git config or credentials file is read whole (to sanitize it) up to this
HASH_BYTES = 256 * 1024 * 1024  # file_sha256 is given for a file up to this size (it is read whole for it)


class Read(Tool):
    name = "read"
    domain = "read"
    risk = "low"
    aliases = ("Read",)
    sized = True
    concurrent = "read"  # changes neither the workspace nor the world: may run beside others
    description = (
        f"Read a text file, numbered: limit lines (default {DEFAULT_LIMIT}) from offset (1-based)."
    )
    schema = {
        "type": "object",
        "properties": {
            "path": {"type": "string"},
            # 0 is taken as "the start" / "the default": small models send it (Qwen2.5-Coder 0.5B sent offset 0 on
            # llama-cpp-python three times over, InvalidArguments each time, a doom loop instead of a read)
            "offset": {"type": "integer", "minimum": 0},
            "limit": {"type": "integer", "minimum": 0},
            "tail_lines": {"type": "integer"},
            "max_lines": {"type": "integer"},
            "max_bytes": {"type": "integer"},
        },
        "required": ["path"],
        "additionalProperties": False,
    }

    def targets(self, args: dict[str, Any], ctx: ToolContext) -> list[Target]:
        return paths.targets(ctx, self.domain, args["path"])

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        path = paths.resolve(ctx, args["path"])
        shown = paths.display(ctx, path)
        again = _unchanged_since_shown(path, args, ctx, shown)
        offset, limit, tail = _window(args, ctx)
        try:
            with _open_regular(path, shown) as f:
                if gitconfig.is_git_config(path) or gitconfig.is_credential_file(path):
                    # The credentials git stores are never shown (issue 25): the text as gitconfig.seen_as gives it.
                    f = io.BytesIO(gitconfig.seen_as(path, f.read(SEEN_AS_BYTES)))
                if tail:  # the last lines: a pass counts them all (and hashes the file), then from where they are
                    counted = Pages(f, shown, 2**62, 1, ctx)
                    counted.marks = []
                    counted.scan()
                    offset = max(1, counted.lines - limit + 1)
                pages = Pages(f, shown, offset, limit, ctx)
                if tail:
                    pages.follow(counted)
                pages.scan()
                file_sha256 = pages.whole_sha256()
        except OSError as exc:
            raise ToolError("IOError", f"cannot read {shown}: {exc.strerror or exc}") from None
        out, total = pages.out, pages.lines
        last = offset + len(out) - 1
        content = "\n".join(out)
        if not pages.complete:
            content += f"\n[lines {offset}-{last} of more than {total}; read with offset={last + 1} for more]"
        elif last < total:
            content += f"\n[lines {offset}-{last} of {total}; read with offset={last + 1} for more]"
        elif not out:
            content = f"[{shown}: {total} lines; nothing at offset {offset}]"
        details: dict[str, Any] = {"lines": total, "shown": [offset, last], "file_sha256": file_sha256}
        if not pages.complete:
            details["lines_counted"] = "partial"
        ctx.state.seen.add(str(path))  # `write` may now replace it
        if again is not None:
            content += f"\n{again}"
            details["unchanged"] = True
        return ToolOutput(content, details)


def _window(args: dict[str, Any], ctx: ToolContext) -> tuple[int, int, int]:
    """(offset, limit, tail) of a call: `tail_lines` N is the last N lines, `max_lines` N at most N from offset,
    each bounded by the policy's truncation.maxLines; `limit` as given (default DEFAULT_LIMIT)."""
    tail, most = positive(args.get("tail_lines")), positive(args.get("max_lines"))
    if tail and (most or args.get("offset")):
        raise ToolError("InvalidArguments", "tail_lines reads the file's last lines: give it without offset/max_lines")
    limit = args.get("limit") or DEFAULT_LIMIT
    if tail or most:
        asked = min(tail or most or 0, ctx.truncation.max_lines)
        limit = min(asked, args["limit"]) if args.get("limit") else asked
    return args.get("offset") or 1, limit, tail or 0


def _open_regular(path: Path, shown: str) -> BinaryIO:
    """The file, unbuffered; ToolError for a directory, a FIFO, socket or device (which could block the
    run forever: one is never opened as found, and opened without waiting if it became one since), a
    file past MAX_FILE_BYTES."""
    st = os.stat(path)
    if stat.S_ISDIR(st.st_mode):
        raise ToolError("IOError", f"{shown} is a directory; use list")
    fd = -1
    if stat.S_ISREG(st.st_mode):
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        if fd >= 0:
            os.close(fd)
        raise ToolError("IOError", f"{shown} is not a regular file (a FIFO, socket or device); not read")
    f = open(fd, "rb", buffering=0)  # noqa: SIM115 - the caller closes it
    if st.st_size > MAX_FILE_BYTES:
        f.close()
        raise ToolError("FileTooLarge", f"{shown} is {st.st_size} bytes (limit {MAX_FILE_BYTES}); use grep")
    return f


class Pages:
    """One pass over a file in CHUNK-sized reads: the lines [offset, offset + limit) numbered, each kept
    to MAX_LINE_BYTES (a line longer than that is cut, however long it is: never held whole), and the
    number of lines, counted on for at most COUNT_BYTES past the last one shown. Memory is bounded by
    CHUNK and limit × MAX_LINE_BYTES, whatever the file; the run's deadline is checked every chunk."""

    def __init__(self, f: BinaryIO, shown: str, offset: int, limit: int, ctx: ToolContext) -> None:
        self.f, self.shown, self.first, self.end, self.ctx = f, shown, offset, offset + limit, ctx
        self.out: list[str] = []
        self.lines = 0  # complete lines so far (plus a last one without a newline, at the end)
        self.complete = True  # whether `lines` counts the whole file
        self.sha = hashlib.sha256()  # of every byte read
        self.hashing, self.probed = True, False
        # When asked for (a list): where each chunk starts in the file, and how many lines end before it.
        self.marks: list[tuple[int, int]] | None = None

    def follow(self, counted: Pages) -> None:
        """Go on from a pass that counted (and hashed, and probed) the whole file with its `marks`: from the last
        chunk it read that starts before this window's first line, which is all this pass reads again."""
        at, before = max(((pos, n) for pos, n in counted.marks or [] if n < self.first - 1), default=(0, 0))
        self.f.seek(at)
        self.lines, self.sha, self.hashing, self.probed = before, counted.sha, False, True

    def scan(self) -> None:
        line = bytearray()  # the part kept of the current line, when it is one to show
        over = False  # the current line is longer than what is kept
        counted_after = 0
        started = False
        ends_open = False  # the file's last byte is not a newline
        while chunk := self.f.read(CHUNK):
            if self.marks is not None:
                self.marks.append((self.f.tell() - len(chunk), self.lines))
            if self.hashing:
                self.sha.update(chunk)
            if not started:
                started = True
                if not self.probed and b"\x00" in chunk[:BINARY_PROBE]:
                    raise ToolError("IOError", f"{self.shown} looks binary; not shown")
            self._check_time()
            ends_open = not chunk.endswith(b"\n")
            number = self.lines + 1  # the line the chunk starts in
            if number >= self.end:
                counted_after += len(chunk)
                self.lines += chunk.count(b"\n")
                if counted_after > COUNT_BYTES:
                    self.complete = False
                    return
                continue
            newlines = chunk.count(b"\n")
            if number + newlines < self.first:  # the lines to show start in a later chunk
                self.lines += newlines
                continue
            pos = 0
            while True:
                nl = chunk.find(b"\n", pos)
                stop = len(chunk) if nl < 0 else nl
                if self.first <= number < self.end:
                    room = MAX_LINE_BYTES - len(line)
                    line += chunk[pos:min(stop, pos + max(room, 0))]
                    over = over or stop - pos > room
                if nl < 0:
                    break
                if self.first <= number < self.end:
                    self.out.append(_render(number, line, over))
                line.clear()
                over = False
                self.lines = number
                number += 1
                pos = nl + 1
                if number >= self.end:  # the rest of the chunk is only counted
                    self.lines += chunk.count(b"\n", pos)
                    counted_after += len(chunk) - pos
                    break
        if ends_open:
            self.lines += 1  # the last line has no newline
            if self.first <= self.lines < self.end:
                self.out.append(_render(self.lines, line, over))

    def whole_sha256(self) -> str | None:
        """The sha256 of the whole file: the scan's reads, then the rest of the file (a scan stops counting
        COUNT_BYTES past what it shows), up to HASH_BYTES in all; None for a larger file."""
        read = self.f.tell()
        size = self.f.seek(0, io.SEEK_END)
        if size > HASH_BYTES:
            return None
        self.f.seek(read)
        while chunk := self.f.read(CHUNK):
            self._check_time()
            self.sha.update(chunk)
        return self.sha.hexdigest()

    def _check_time(self) -> None:
        why = self.ctx.cancel.why()
        if why is not None:
            raise ToolError("Timeout", f"read stopped: {why}")


def _render(number: int, kept: bytearray, over: bool) -> str:
    text = kept.decode("utf-8", errors="replace")
    if not over and text.endswith("\r"):
        text = text[:-1]  # CRLF
    if over or len(text) > MAX_LINE_CHARS:
        text = text[:MAX_LINE_CHARS] + f"… [line cut at {MAX_LINE_CHARS} chars]"
    return f"{number}\t{text}"


_WINDOW = ("offset", "limit", "tail_lines", "max_lines", "max_bytes")


def _unchanged_since_shown(path: Path, args: dict[str, Any], ctx: ToolContext, shown: str) -> str | None:
    """For the agent's own first read, whole, of a file the runner read for it before its first request (`--preset
    small`, runner/run/preload.py) that has not changed since: a note after its text that says so, and how to go on.
    The 1.5B model re-read the last such file and, given the same text alone again, replied with nothing; given
    the note alone, it went on but seldom made the edit it was then shown; given both, it did (probes of the real
    model at the same point). None otherwise."""
    digest = ctx.state.shown.pop(str(path), None)
    if digest is None or any(args.get(key) for key in _WINDOW):
        return None
    try:
        if hashlib.sha256(path.read_bytes()).hexdigest() != digest:
            return None
    except OSError:
        return None
    go = [how for tool, how in (("edit", "change it with edit"), ("bash", "run a command with bash"))
          if tool in ctx.state.tools]
    then = f" Go on from there: {', or '.join(go)}." if go else ""
    return f"[{shown} has not changed since it was read for you above.{then}]"
