"""What a batch reports of its tasks (`batch` and `batch-merge` alike): the terminal table, every task's
annotations titled with its task, and the step summary's overview table. Pure functions of the tasks'
summaries and of batch.json; the text in them is the runs' (reasons may carry a model's or an endpoint's
words), so the Markdown is defused like a run's step summary.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from runner.report.github import annotation_lines, escape_property
from runner.report.markdown import clip, code_span, md_text
from runner.report.step_summary import STATUS_ICON, SUMMARY_LIMIT


def table(tasks: Sequence[str], summaries: Sequence[Mapping[str, Any]]) -> list[str]:
    """task, status, exit code, turns, duration, run dir (or the reason when there is none), aligned."""
    rows = [(t, str(s.get("status", "?")), str(s.get("exit_code")), _text(s.get("turns")),
             f"{_seconds(s.get('duration_s')):.1f}s", str(s.get("run_dir") or s.get("reason") or ""))
            for t, s in zip(tasks, summaries, strict=True)]
    header = ("task", "status", "exit", "turns", "time", "run dir")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(5)]
    return ["  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:5])) + "  " + row[5]
            for row in [header, *rows]]


def task_annotations(task: str, summary: Mapping[str, Any]) -> list[str]:
    """The annotations `run` would have written for this task (from its masked summary), each title
    naming the task: in a batch, "denied bash" alone does not say which task."""
    lines = []
    for line in annotation_lines(summary, summary.get("loop_warnings") or []):
        # `command` escapes `:` and `,` in property values, so the title ends at the first `::` or `,`.
        head, sep, tail = line.partition(" title=")
        end = min(i for i in (tail.find("::"), tail.find(","), len(tail)) if i >= 0)
        lines.append(f"{head}{sep}{tail[:end]}{escape_property(f' ({task})')}{tail[end:]}" if sep else line)
    return lines


def markdown(result: Mapping[str, Any], limit: int = SUMMARY_LIMIT) -> str:
    """The batch's section of the step summary: its ending, the shards a merge is missing, and one row per
    task (status, exit code, turns, time, shard when merged, run id, reason). At most `limit` UTF-8 bytes:
    rows are dropped from the end with a note (batch.json keeps them all)."""
    tasks = [t for t in result.get("tasks") or [] if isinstance(t, Mapping)]
    shards = result.get("shards") if isinstance(result.get("shards"), Mapping) else None
    code = result.get("exit_code")
    icon = "✅" if code == 0 else "❌"
    what = f"{len(tasks)} task{'' if len(tasks) == 1 else 's'}"
    if shards is not None:
        what += f", merged from {len(shards.get('reported') or [])} of {shards.get('total')} shards"
    head = [f"## {icon} agent-run batch: {what} (exit {code})", ""]
    if shards is not None:
        for index in shards.get("missing") or []:
            head += [f"**Shard {index} of {shards['total']} never reported**: its tasks are not in this table "
                     "and the batch fails.", ""]
    columns = ["task", "status", "exit", "turns", "time", *(["shard"] if shards is not None else []), "run id",
               "reason"]
    head += ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    rows = [_row(t, shards is not None) for t in tasks]
    text = "\n".join(head + rows) + "\n"
    while len(text.encode("utf-8")) > limit and rows:
        cut = max(1, len(rows) // 10)
        rows = rows[:-cut]
        note = f"\n… {len(tasks) - len(rows)} more task(s): see batch.json\n"
        text = "\n".join(head + rows) + "\n" + note
    return text


def _row(entry: Mapping[str, Any], merged: bool) -> str:
    status = str(entry.get("status") or "?")
    icon = STATUS_ICON.get(status)
    cells = [code_span(clip(entry.get("task") or "?")), f"{icon + ' ' if icon else ''}{code_span(status)}",
             md_text(entry.get("exit_code")), md_text(entry.get("turns") if entry.get("turns") is not None else ""),
             f"{_seconds(entry.get('duration_s')):.1f}s"]
    if merged:
        cells.append(md_text(entry.get("shard")))
    cells += [code_span(entry.get("run_id") or ""), md_text(clip(entry.get("reason") or ""))]
    return "| " + " | ".join(cells) + " |"


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _seconds(value: Any) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0
