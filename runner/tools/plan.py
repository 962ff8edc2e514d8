"""An agent's plan (the `todo` tool's state, kept in its `AgentState`, runner/tools/base.py): the list as last
written, with an id for each item, and its recitation; `plan.json` in the run directory mirrors every agent's."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from pathlib import Path

from runner.record.rundir import write_atomic

MARKS = {"pending": "[ ]", "in_progress": "[>]", "completed": "[x]", "failed": "[!]"}
MIRROR = "plan.json"
_MIRROR_LOCK = threading.Lock()  # children at once write their plans into one file
RECITE_EVERY = 8  # turns without an update or a recitation before the plan is re-sent


def render(items: list[dict[str, str]]) -> str:
    if not items:
        return "(the plan is empty)"
    done = sum(i["status"] == "completed" for i in items)
    lines = [f"{MARKS[i['status']]} {i['content']}" for i in items]
    return "\n".join(lines) + f"\n({done}/{len(items)} completed)"


@dataclass
class Plan:
    """The todo list as the agent last wrote it, and how long ago it was last written or recited."""

    items: list[dict[str, str]] = field(default_factory=list)
    since: int = 0
    next_id: int = 1

    def write(self, items: list[dict[str, str]]) -> None:
        """The new list, each item with its `id`: an item whose text an earlier item had keeps that one's id (the
        model rewrites the whole list each call), a new one takes the next number."""
        old = {i["content"]: i["id"] for i in self.items if "id" in i}
        out = []
        for item in items:
            known = old.pop(item["content"], None)
            if known is None:
                known, self.next_id = str(self.next_id), self.next_id + 1
            out.append({"id": known, **{k: v for k, v in item.items() if k != "id"}})
        self.items = out
        self.since = 0

    def mirror(self, run_dir: Path | None, agent: str) -> None:
        """`plan.json` in the run directory: every agent's plan by its id (`main`, `a1`, …), as last written."""
        if run_dir is None:
            return
        path = run_dir / MIRROR
        with _MIRROR_LOCK:
            try:
                plans = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                plans = {}
            write_atomic(path, json.dumps({**plans, agent: self.items}, indent=2, ensure_ascii=False) + "\n")

    def recite(self, turn: int, compacted: bool) -> str | None:
        """Before a request: the plan to re-send (appended), after a compaction or a long stretch; else None."""
        if not self.items:
            return None
        self.since += 1
        if not compacted and self.since <= RECITE_EVERY:
            return None
        self.since = 0
        return f"[agent-run: your plan so far (todo)]\n{render(self.items)}"
