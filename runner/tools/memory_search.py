"""`memory_search`: search this run's own events.jsonl — earlier tool outputs, the model's own
messages, compaction summaries — including what has been cleared from the conversation, and its spill
files, the whole outputs that truncation and pruning cut (in outputs/ or the fallback directory,
runner/tools/spill.py), each hit named by path and line so the model can `read` around it. Spill files are
read as written (masked), line by line, within a byte cap per call."""

from __future__ import annotations

import datetime as dt
import os
import stat
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from runner.core.events import Compaction, Event, ModelResponse, ToolResult
from runner.policy.model import Target
from runner.policy.targets import path_target
from runner.record.logged import Logged, read_log
from runner.tools.base import Tool, ToolContext, ToolError, ToolOutput
from runner.tools.spill import SPILL_GLOB, spill_dirs, spill_time

DEFAULT_LIMIT = 10
MAX_LIMIT = 50
CONTEXT_CHARS = 200  # shown on each side of the match
MAX_SNIPPET_CHARS = 600  # the context of one snippet, header not counted
MAX_QUERY_CHARS = 200
MAX_RESULT_CHARS = 12_000  # the whole answer stays small whatever the limit
MAX_SPILL_BYTES = 64 * 1024 * 1024  # spill text read per call, newest files first
MAX_SPILL_LINE = 64 * 1024  # a longer line is searched in pieces of this size


class MemorySearch(Tool):
    name = "memory_search"
    domain = "read"
    risk = "low"
    concurrent = "read"  # changes neither the workspace nor the world: may run beside others
    description = (
        "All words of query, any case, in this run's earlier tool outputs (even cleared or cut) and your messages; "
        f"newest first, limit ≤{MAX_LIMIT}."
    )
    schema = {
        "type": "object",
        "properties": {
            "query": {"type": "string", "minLength": 1},
            "limit": {"type": "integer", "minimum": 1},
        },
        "required": ["query"],
        "additionalProperties": False,
    }

    def targets(self, args: dict[str, Any], ctx: ToolContext) -> list[Target]:
        return [Target("read", path_target(ctx.workspace, _events_path(ctx)))]

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        path = _events_path(ctx)
        query = " ".join(str(args.get("query", "")).split())
        if not query:
            raise ToolError("InvalidArguments", "query is empty")
        if len(query) > MAX_QUERY_CHARS:
            raise ToolError("InvalidArguments", f"query is {len(query)} characters (limit {MAX_QUERY_CHARS})")
        limit = max(1, min(int(args.get("limit", DEFAULT_LIMIT)), MAX_LIMIT))
        needle = query.lower()
        words = list(dict.fromkeys(needle.split()))
        # (when, snippet); the file is read forward: keep the last `limit`
        newest: deque[tuple[dt.datetime, str]] = deque(maxlen=limit)
        total = scanned = 0
        try:
            for logged in _records(path):
                scanned += 1
                for label, text in _texts(logged.event):
                    found = _match(text, needle, words)
                    if found is not None:
                        total += 1
                        seq = "?" if logged.seq is None else logged.seq
                        newest.append((_when(logged.ts), f"[seq {seq} · {label}] {_snippet(text, *found)}"))
        except OSError as exc:
            raise ToolError("IOError", f"cannot read this run's events: {exc.strerror or exc}") from None
        spills = SpillScan(needle, words, limit, ctx)
        spills.scan()
        total += spills.total
        details = {"events": scanned, "spill_files": spills.files, "spill_matches": spills.total,
                   **({"spill_stopped": spills.stop} if spills.stop else {})}
        if not total:
            where = f"this run's {scanned} events" + (f" and {spills.files} spill files" if spills.files else "")
            return ToolOutput(f"[no match for {query!r} in {where}{spills.note()}]",
                              {"matches": 0, "shown": 0, **details})
        shown: list[str] = []
        size = 0
        # Newest first, events and spill files together (a stable sort: events of one millisecond stay newest first).
        for _, snippet in sorted([*reversed(newest), *spills.hits], key=lambda hit: hit[0], reverse=True)[:limit]:
            if shown and size + len(snippet) > MAX_RESULT_CHARS:
                break
            shown.append(snippet)
            size += len(snippet) + 2
        note = f"[{total} match{'es' if total != 1 else ''} for {query!r}; {len(shown)} shown, newest first"
        if total > len(shown):
            note += "; narrow the query or raise limit for older ones"
        text = "\n\n".join(shown) + "\n\n" + note + spills.note() + "]"
        return ToolOutput(text, {"matches": total, "shown": len(shown), **details})


class SpillScan:
    """The run's spill files searched line by line, newest file first, up to MAX_SPILL_BYTES in all: a hit
    names the file and the line. Asks the run's Cancel (its stop and wall clock) between lines."""

    def __init__(self, needle: str, words: list[str], limit: int, ctx: ToolContext) -> None:
        self.needle, self.words, self.limit, self.ctx = needle, words, limit, ctx
        self.hits: list[tuple[dt.datetime, str]] = []
        self.total = 0
        self.files = 0
        self.bytes = 0
        self.stop: str | None = None

    def scan(self) -> None:
        found: list[tuple[dt.datetime, Path]] = []
        for folder in spill_dirs(self.ctx.outputs_dir):
            try:
                if not stat.S_ISDIR(folder.lstat().st_mode):  # a symlink planted in the fallback's place
                    continue
                found += [(spill_time(p) or _EPOCH, p) for p in folder.glob(SPILL_GLOB) if _regular(p)]
            except OSError:
                continue
        for when, path in sorted(found, reverse=True):
            if self.stop is not None:
                break
            self.files += 1
            try:
                self._file(path, when)
            except OSError:
                continue  # removed meanwhile (cleanup), or unreadable: the others are still searched

    def _file(self, path: Path, when: dt.datetime) -> None:
        # Spill files are the runner's own regular files: never through a symlink, never waiting on a FIFO.
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            return
        with os.fdopen(fd, "rb") as f:
            number, carry = 0, False
            while piece := f.readline(MAX_SPILL_LINE):
                if not carry:
                    number += 1
                carry = not piece.endswith(b"\n")  # the line goes on in the next piece
                self.bytes += len(piece)
                if self._stopped():
                    return
                text = piece.decode("utf-8", "replace")
                found = _match(text, self.needle, self.words)
                if found is None:
                    continue
                self.total += 1
                # Files come newest first: no later one's hit is shown before these, so `limit` in all are kept.
                if len(self.hits) < self.limit:
                    self.hits.append((when, f"[spill {path} · line {number}] {_snippet(text, *found)}"))

    def _stopped(self) -> bool:
        if self.stop is None:
            self.stop = self.ctx.cancel.why()
            if self.stop is None and self.bytes > MAX_SPILL_BYTES:
                self.stop = f"{MAX_SPILL_BYTES // (1024 * 1024)} MiB of spill files searched"
        return self.stop is not None

    def note(self) -> str:
        return f"; spill search stopped: {self.stop}, older spill files not searched" if self.stop else ""


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def _regular(path: Path) -> bool:
    """A regular file, not through a symlink (is_file() follows one)."""
    try:
        return stat.S_ISREG(path.lstat().st_mode)
    except OSError:
        return False


def _when(ts: Any) -> dt.datetime:
    """An event's `ts` (RFC 3339, UTC) as a time to order hits by."""
    try:
        return dt.datetime.strptime(str(ts), "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=dt.UTC)
    except ValueError:
        return _EPOCH


def _events_path(ctx: ToolContext) -> Path:
    if ctx.run_dir is None:
        raise ToolError("IOError", "this run has no run directory, so there is no history to search")
    return ctx.run_dir / "events.jsonl"


def _records(path: Path) -> Iterator[Logged]:
    if not path.is_file():
        raise ToolError("IOError", f"no event log at {path}")
    return read_log(path)


def _texts(event: Event) -> Iterator[tuple[str, str]]:
    """(label, text) for each searchable text of one event."""
    if isinstance(event, ToolResult):
        # Its own earlier answers would only echo the snippets back: not searched.
        if event.tool != MemorySearch.name and event.content:
            yield f"tool_result · {event.tool} {event.call_id}", event.content
    elif isinstance(event, ModelResponse):
        message = event.message
        if isinstance(message, dict) and message.get("role", "assistant") == "assistant":
            text = _message_text(message.get("content"))
            if text:
                yield f"model_response · turn {event.turn}", text
    elif isinstance(event, Compaction) and event.summary is not None:
        stage = f" · {event.stage}" if event.stage is not None else ""
        yield f"{event.type}{stage}", event.summary


def _message_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return "\n".join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def _match(text: str, needle: str, words: list[str]) -> tuple[int, int] | None:
    """(start, length) of what to centre the snippet on: the whole query, else — for a query of
    several words found all in this text — the earliest of them."""
    lower = text.lower()
    at = lower.find(needle)
    if at >= 0:
        return at, len(needle)
    if len(words) < 2:
        return None
    found = [(lower.find(w), len(w)) for w in words]
    if any(pos < 0 for pos, _ in found):
        return None
    return min(found)


def _snippet(text: str, at: int, length: int) -> str:
    start = max(0, at - CONTEXT_CHARS)
    end = min(len(text), at + length + CONTEXT_CHARS, start + MAX_SNIPPET_CHARS)
    return ("…" if start > 0 else "") + text[start:end].strip() + ("…" if end < len(text) else "")
