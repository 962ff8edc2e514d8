"""`memory_search`: search this run's own events.jsonl — earlier tool outputs, the model's own
messages, compaction summaries — including what has been cleared from the conversation."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from runner.policy.model import Target
from runner.policy.targets import path_target
from runner.record.jsonl import iter_events
from runner.tools.base import Tool, ToolContext, ToolError, ToolOutput

DEFAULT_LIMIT = 10
MAX_LIMIT = 50
CONTEXT_CHARS = 200  # shown on each side of the match
MAX_SNIPPET_CHARS = 600  # the context of one snippet, header not counted
MAX_QUERY_CHARS = 200
MAX_RESULT_CHARS = 12_000  # the whole answer stays small whatever the limit


class MemorySearch(Tool):
    name = "memory_search"
    domain = "read"
    concurrent = "read"  # changes neither the workspace nor the world: may run beside others
    description = (
        "Search this run's earlier tool outputs (even cleared ones) and your messages for all words of query, any "
        f"case. Newest first; limit default {DEFAULT_LIMIT}, max {MAX_LIMIT}."
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
        newest: deque[str] = deque(maxlen=limit)  # the file is read forward: keep the last `limit`
        total = scanned = 0
        try:
            for record in _records(path):
                scanned += 1
                for label, text in _texts(record):
                    found = _match(text, needle, words)
                    if found is not None:
                        total += 1
                        newest.append(f"[seq {record.get('seq', '?')} · {label}] {_snippet(text, *found)}")
        except OSError as exc:
            raise ToolError("IOError", f"cannot read this run's events: {exc.strerror or exc}") from None
        if not total:
            return ToolOutput(f"[no match for {query!r} in this run's {scanned} events]",
                              {"matches": 0, "shown": 0, "events": scanned})
        shown: list[str] = []
        size = 0
        for snippet in reversed(newest):
            if shown and size + len(snippet) > MAX_RESULT_CHARS:
                break
            shown.append(snippet)
            size += len(snippet) + 2
        note = f"[{total} match{'es' if total != 1 else ''} for {query!r}; {len(shown)} shown, newest first"
        if total > len(shown):
            note += "; narrow the query or raise limit for older ones"
        text = "\n\n".join(shown) + "\n\n" + note + "]"
        return ToolOutput(text, {"matches": total, "shown": len(shown), "events": scanned})


def _events_path(ctx: ToolContext) -> Path:
    if ctx.run_dir is None:
        raise ToolError("IOError", "this run has no run directory, so there is no history to search")
    return ctx.run_dir / "events.jsonl"


def _records(path: Path) -> Iterator[dict[str, Any]]:
    if not path.is_file():
        raise ToolError("IOError", f"no event log at {path}")
    return iter_events(path)


def _texts(record: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(label, text) for each searchable text of one event."""
    kind = record.get("type")
    if kind == "tool_result":
        # Its own earlier answers would only echo the snippets back: not searched.
        if record.get("tool") != MemorySearch.name and isinstance(record.get("content"), str):
            yield f"tool_result · {record.get('tool')} {record.get('call_id')}", record["content"]
    elif kind == "model_response":
        message = record.get("message")
        if isinstance(message, dict) and message.get("role", "assistant") == "assistant":
            text = _message_text(message.get("content"))
            if text:
                yield f"model_response · turn {record.get('turn')}", text
    if isinstance(record.get("summary"), str):  # compaction events and the like
        stage = f" · {record['stage']}" if isinstance(record.get("stage"), str) else ""
        yield f"{kind}{stage}", record["summary"]


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
