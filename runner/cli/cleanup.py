"""`agent-run cleanup`: remove old run directories and spill files."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import click

from runner.cli.runs_read import runs_root
from runner.core.events import RunStarted
from runner.core.outcome import EXIT_CODES, Status
from runner.record.logged import read_log
from runner.report.summary_file import read_summary
from runner.tools.spill import remove_older_than

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_age(text: str) -> float:
    """`7d`, `12h`, `30m`, `90s`, `2w`; a bare number is days."""
    found = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*", text)
    if not found:
        raise ValueError(f"not a duration: {text!r} (use e.g. 7d, 12h, 30m)")
    return float(found.group(1)) * _UNITS[found.group(2) or "d"]


@click.command("cleanup")
@click.option("--workspace", default=".", show_default=True, metavar="DIR")
@click.option("--runs-dir", metavar="DIR", help="[default: WORKSPACE/.agent-run/runs]")
@click.option("--older-than", "older_than", default="7d", show_default=True, metavar="AGE",
              help="7d, 12h, 30m, 90s, 2w; a bare number is days.")
@click.option("--spills-only", is_flag=True, help="Keep run directories; remove only old spill files.")
@click.option("--dry-run", is_flag=True, help="List what would be removed.")
@click.option("--break-lineage", is_flag=True,
              help="Remove old runs that a kept run was resumed, forked or replayed from too (the kept run still "
                   "resumes; what it inherited from them, their spill files, is gone).")
def cleanup(workspace: str, runs_dir: str | None, older_than: str, spills_only: bool, dry_run: bool,
            break_lineage: bool) -> None:
    """Remove run directories (and spill files) older than AGE.

    An old run that a kept run was resumed, forked or replayed from (its ancestors, however far back) is kept,
    each with a line on stderr saying why, unless --break-lineage. Also removes worktrees
    (WORKSPACE/.agent-run/worktrees/) older than AGE, but none a running run holds locked, and none reached
    through a symlink; only what was really removed is listed."""
    try:
        age = parse_age(older_than)
    except ValueError as exc:
        click.echo(f"agent-run: {exc}", err=True)
        sys.exit(EXIT_CODES[Status.USAGE_ERROR])
    root = runs_root(workspace, runs_dir)
    kept: dict[Path, str] = {}
    if not spills_only and not break_lineage:
        kept = ancestors_kept(root, remove_older_than(root, age, spills_only=False, dry_run=True))
    for run, child in sorted(kept.items()):
        click.echo(f"kept {run.name}: ancestor of {child} (--break-lineage removes it)", err=True)
    removed = remove_older_than(root, age, spills_only=spills_only, dry_run=dry_run, keep_runs=set(kept))
    if not spills_only:
        from runner.workspace.worktree import remove_older_worktrees

        removed += remove_older_worktrees(Path(workspace).resolve(), age, dry_run=dry_run)
    for path in removed:
        click.echo(str(path))
    verb = "would remove" if dry_run else "removed"
    click.echo(f"{verb} {len(removed)} item(s) older than {older_than} in {root}", err=True)


def ancestors_kept(root: Path, doomed: list[Path]) -> dict[Path, str]:
    """Of the run directories about to be removed, those a kept run needs: the runs it was resumed, forked or
    replayed from (run_started.resumed_from / replay_of), and theirs in turn; each with the id of the run that
    needs it."""
    doomed_runs = {p for p in doomed if p.parent == root}
    runs = [p for p in root.iterdir() if p.is_dir() and not p.is_symlink()] if root.is_dir() else []
    todo = [p for p in runs if p not in doomed_runs]
    kept: dict[Path, str] = {}
    while todo:
        run = todo.pop()
        for parent in _parents(run):
            path = root / parent
            if path in doomed_runs and path not in kept:
                kept[path] = run.name
                todo.append(path)
    return kept


def _parents(run: Path) -> set[str]:
    """The ids of the runs this one went on from, as its run_started records them (else its summary.json)."""
    first = next(read_log(run / "events.jsonl"), None)
    if first is not None and isinstance(first.event, RunStarted):
        resumed, replay_of = first.event.resumed_from, first.event.replay_of
    else:
        summary = read_summary(run) or {}
        resumed, replay_of = summary.get("resumed_from"), summary.get("replay_of")
    found = set()
    if isinstance(resumed, dict) and isinstance(resumed.get("run_id"), str):
        found.add(resumed["run_id"])
    if isinstance(replay_of, str):
        found.add(replay_of)
    # Only a plain directory name in this runs directory: a recorded id is never a path to follow.
    return {name for name in found if name and "/" not in name and name not in (".", "..")}
