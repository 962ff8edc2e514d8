"""`agent-run cleanup`: remove old run directories and spill files."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import click

from runner.core.outcome import EXIT_CODES, Status
from runner.record.rundir import default_runs_dir
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
def cleanup(workspace: str, runs_dir: str | None, older_than: str, spills_only: bool, dry_run: bool) -> None:
    """Remove run directories (and spill files) older than AGE.

    Also removes worktrees (WORKSPACE/.agent-run/worktrees/) older than AGE, but none a running run holds
    locked, and none reached through a symlink; only what was really removed is listed."""
    try:
        age = parse_age(older_than)
    except ValueError as exc:
        click.echo(f"agent-run: {exc}", err=True)
        sys.exit(EXIT_CODES[Status.USAGE_ERROR])
    root = Path(runs_dir).expanduser().resolve() if runs_dir else default_runs_dir(Path(workspace).resolve())
    removed = remove_older_than(root, age, spills_only=spills_only, dry_run=dry_run)
    if not spills_only:
        from runner.workspace.worktree import remove_older_worktrees

        removed += remove_older_worktrees(Path(workspace).resolve(), age, dry_run=dry_run)
    for path in removed:
        click.echo(str(path))
    verb = "would remove" if dry_run else "removed"
    click.echo(f"{verb} {len(removed)} item(s) older than {older_than} in {root}", err=True)
