"""Truncation of tool output: two pure functions and the text the model sees.

Whole lines only, never a split UTF-8 character; output exactly at a limit is
not truncated, one byte or one line over is. `head` keeps the beginning (read,
grep, glob, list), `tail` keeps the end (bash: errors come last). A single line
longer than the byte limit is the one case cut inside a line, at a character
boundary.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

DEFAULT_MAX_LINES = 2000
DEFAULT_MAX_BYTES = 51200


# The policy's `truncation` keys besides `preset`, each to its Limits field (`agent-run config show` lists them).
POLICY_KEYS = {"maxLines": "max_lines", "maxBytes": "max_bytes", "ttlDays": "ttl_days"}


@dataclass(frozen=True)
class Limits:
    max_lines: int = DEFAULT_MAX_LINES
    max_bytes: int = DEFAULT_MAX_BYTES
    ttl_days: float = 7.0  # spill files older than this are removed when a run first spills
    delegate: bool = False  # the agent may hand work to a subagent (`task` allowed): the hint says so

    @classmethod
    def from_policy(cls, section: dict[str, Any]) -> Limits:
        """The policy's `truncation`: its `preset`'s limits (default: `default`), each `maxLines` / `maxBytes`
        given beside it winning."""
        lines, size = PRESETS[section.get("preset", "default")]
        return cls(int(section.get("maxLines", lines)), int(section.get("maxBytes", size)),
                   float(section.get("ttlDays", 7.0)))

    def for_call(self, args: dict[str, Any]) -> Limits:
        """These limits for one call of `read` or `bash`: its own `max_bytes`, when given, lowers the byte limit
        (never raises it)."""
        asked = positive(args.get("max_bytes"))
        return self if asked is None else replace(self, max_bytes=min(asked, self.max_bytes))


# truncation.preset: (maxLines, maxBytes). compact for a small window, verbose for a large one.
PRESETS = {"compact": (500, 12 * 1024), "default": (DEFAULT_MAX_LINES, DEFAULT_MAX_BYTES),
           "verbose": (8000, 200 * 1024)}


@dataclass(frozen=True)
class Truncation:
    text: str  # what is kept
    truncated: bool
    total_lines: int
    total_bytes: int
    kept_lines: int
    kept_bytes: int
    by: str | None  # "lines" or "bytes": which limit cut

    @property
    def omitted_lines(self) -> int:
        return self.total_lines - self.kept_lines

    @property
    def omitted_bytes(self) -> int:
        return self.total_bytes - self.kept_bytes


def positive(value: Any) -> int | None:
    """A per-call count (lines, results) as given, or None: 0 or less is taken as "not given", as small models
    send 0 for "no particular limit"."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def count_lines(text: str) -> int:
    """Lines as a reader counts them: a trailing newline does not start another line."""
    if not text:
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def truncate_head(text: str, limits: Limits) -> Truncation:
    return _truncate(text, limits, from_end=False)


def truncate_tail(text: str, limits: Limits) -> Truncation:
    return _truncate(text, limits, from_end=True)


def _truncate(text: str, limits: Limits, *, from_end: bool) -> Truncation:
    data = text.encode("utf-8")
    total_lines, total_bytes = count_lines(text), len(data)
    if total_lines <= limits.max_lines and total_bytes <= limits.max_bytes:
        return Truncation(text, False, total_lines, total_bytes, total_lines, total_bytes, None)
    lines = text.splitlines(keepends=True)
    if from_end:
        lines.reverse()
    kept: list[str] = []
    size, by = 0, "lines"
    for line in lines:
        if len(kept) >= limits.max_lines:
            by = "lines"
            break
        n = len(line.encode("utf-8"))
        if size + n > limits.max_bytes:
            by = "bytes"
            if not kept:  # one line longer than the limit: cut inside it, at a character boundary
                kept.append(_cut(line, limits.max_bytes, from_end))
                size = len(kept[0].encode("utf-8"))
            break
        kept.append(line)
        size += n
    if from_end:
        kept.reverse()
    out = "".join(kept)
    return Truncation(out, True, total_lines, total_bytes, count_lines(out), len(out.encode("utf-8")), by)


def _cut(line: str, max_bytes: int, from_end: bool) -> str:
    data = line.encode("utf-8")
    part = data[-max_bytes:] if from_end else data[:max_bytes]
    # errors="ignore" drops only the partial character at the cut.
    return part.decode("utf-8", errors="ignore")


def hint(path: str | None, delegate: bool = False) -> str:
    if not path:
        return "The full output was not kept; narrow the command or the read."
    also = (" If all of it must be worked through, delegate that to a subagent with `task` (name the file; only "
            "its answer comes back)." if delegate else "")
    return (f"Full output: {path} — use grep on it, or read it with offset/limit, "
            f"rather than printing it again.{also}")


def marker(t: Truncation) -> str:
    if t.by == "bytes":
        return f"...{t.omitted_bytes} bytes truncated..."
    return f"...{t.omitted_lines} lines truncated..."


def render(t: Truncation, path: str | None, *, from_end: bool, delegate: bool = False) -> str:
    """head: preview, blank line, marker, blank line, hint. tail: marker and hint first, then preview."""
    if not t.truncated:
        return t.text
    if from_end:
        return f"{marker(t)}\n{hint(path, delegate)}\n\n{t.text}"
    return f"{t.text.rstrip(chr(10))}\n\n{marker(t)}\n\n{hint(path, delegate)}"
