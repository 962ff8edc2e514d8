"""`agent-run runs list|show`: what past runs did, read from their run directories
(summary.json and events.jsonl, streamed; never written). Reading: runs_read.py; `show`: runs_show.py."""

from __future__ import annotations

from pathlib import Path

import click

from runner.cli.fence import prints_recorded_text
from runner.cli.runs_format import cell, duration, table, total_tokens
from runner.cli.runs_read import origin, overview, run_dirs, runs_root
from runner.cli.runs_show import show_cmd
from runner.workspace.repofile import read_capped


@click.group("runs")
def runs() -> None:
    """List past runs and show what one of them did."""


@runs.command("list")
@click.option("--workspace", default=".", show_default=True, metavar="DIR")
@click.option("--runs-dir", metavar="DIR", help="[default: WORKSPACE/.agent-run/runs]")
@click.option("--limit", default=20, show_default=True, type=click.IntRange(min=1), metavar="N")
@prints_recorded_text  # the titles are the tasks'
def list_cmd(workspace: str, runs_dir: str | None, limit: int) -> None:
    """One line per run, newest first: id, status, exit, turns, tool calls, tokens, duration, title."""
    root = runs_root(workspace, runs_dir)
    dirs = run_dirs(root)
    if not dirs:
        click.echo(f"no runs in {root}", err=True)
        return
    rows = []
    for path in dirs[:limit]:
        s = overview(path)  # a summary.json of the wrong shape reads as absent fields, never a traceback
        usage = s.get("usage") or {}
        rows.append([s.get("run_id") or path.name, s.get("status") or "?", cell(s.get("exit_code")),
                     cell(s.get("turns")), cell(s.get("tool_calls")), cell(total_tokens(usage)),
                     duration(s.get("duration_s")), " ".join(filter(None, [origin(s), s.get("title")]))])
    headers = ["run", "status", "exit", "turns", "tools", "tokens", "duration", "title"]
    for line in table(headers, rows):
        click.echo(line.rstrip())
    if len(dirs) > limit:
        click.echo(f"{len(dirs) - limit} older run(s) not shown; use --limit", err=True)
    if (note := ignored_note(Path(workspace).expanduser().resolve(), root)) is not None:
        click.echo(note, err=True)


def ignored_note(workspace: Path, root: Path) -> str | None:
    """Runs kept inside the workspace are not the agent's work: said under the listing, since a person who
    sees `.agent-run/` there wonders whether it lands in a commit or a run's changes."""
    if not root.is_relative_to(workspace):
        return None
    state = workspace / ".agent-run"
    if root.is_relative_to(state) and "*" in _lines(state / ".gitignore"):
        return ("agent-run: .agent-run/ is ignored by git (its own .gitignore: *) and never part of a run's "
                "changes (changes.patch, workspace.json)")
    where = root.relative_to(workspace).as_posix()
    return (f"agent-run: {where}/ is inside the workspace: no run counts it among its changes (changes.patch, "
            f"workspace.json), but git shows it unless it is ignored (add {where}/ to .gitignore)")


def _lines(path: Path) -> list[str]:
    """The file's lines: a workspace file, so only a regular one is read (a FIFO there must not hang the listing)."""
    try:
        return [line.strip() for line in read_capped(path, 1 << 16, digest=False)[0].decode("utf-8").splitlines()]
    except (OSError, UnicodeDecodeError):
        return []


runs.add_command(show_cmd)
