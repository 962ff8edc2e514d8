"""Cells and tables for `runs list|show`: one value to one short string, columns as wide as their cells."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any


def table(headers: list[str], rows: list[list[str]]) -> list[str]:
    """Columns as wide as their widest cell; numbers right-aligned; the last column left unpadded."""
    layout = Layout.of(headers, rows)
    return [layout.line(headers), *(layout.line(r) for r in rows)]


@dataclass(frozen=True)
class Layout:
    """A table's columns, worked out in one pass over its rows (which need not be held: `runs show --audit` reads
    its file once for this and once more for the lines)."""

    widths: list[int]
    numeric: list[bool]  # every cell a number (or -), and at least one not -: right-aligned

    @classmethod
    def of(cls, headers: list[str], rows: Iterable[list[str]]) -> Layout:
        widths = [len(h) for h in headers]
        numbers, values = [True] * len(headers), [False] * len(headers)
        for r in rows:
            for i, c in enumerate(r):
                widths[i] = max(widths[i], len(c))
                numbers[i] = numbers[i] and is_number(c)
                values[i] = values[i] or c != "-"
        return cls(widths, [n and v for n, v in zip(numbers, values, strict=True)])

    def line(self, cells: list[str]) -> str:
        parts = [c.rjust(w) if num else c.ljust(w) for c, w, num in zip(cells, self.widths, self.numeric, strict=True)]
        return "  ".join(parts)


def clip(text: str, limit: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def is_number(cell: str) -> bool:
    return cell == "-" or cell.replace(",", "").replace(".", "", 1).lstrip("-").isdigit()


def cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, dict | list):
        return json.dumps(value, sort_keys=True, ensure_ascii=False)
    return str(value)


def total_tokens(usage: dict[str, Any]) -> int | None:
    if isinstance(usage.get("total_tokens"), int):
        return usage["total_tokens"]
    prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
    if not isinstance(prompt, int) and not isinstance(completion, int):
        return None
    return (prompt if isinstance(prompt, int) else 0) + (completion if isinstance(completion, int) else 0)


def duration(seconds: Any) -> str:
    if not isinstance(seconds, int | float):
        return "-"
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    return f"{minutes // 60}h{minutes % 60:02d}m"


def cost(value: Any) -> str:
    if not isinstance(value, int | float):
        return "unknown"
    return f"${value:.4f}" if value >= 0.01 else f"${value:.6f}"


def finding(value: Any) -> str | None:
    if not value:
        return None
    if isinstance(value, dict):
        return " ".join(f"{k}={cell(v)}" for k, v in value.items())
    return cell(value)


def changed(s: dict[str, Any]) -> str | None:
    if "changed_files" not in s:
        return None
    files = s["changed_files"]
    if files is None:
        return f"unknown ({s.get('changes_error') or 'not recorded'})"
    return ", ".join(files) if files else "none"


def decision(call: dict[str, Any]) -> str:
    made = call.get("decision")
    if made is None:
        return "-"
    policy = call.get("policy_decision")
    return f"{made} ({policy})" if policy and policy != made and made == "deny" else str(made)
