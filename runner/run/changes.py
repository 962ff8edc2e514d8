"""The record of what the agent changed: summary `changed_files` / `ignored_new_files`, `changes.patch`,
`ignored.patch` and `workspace.json`.

Taken before the task's check when it has one (runner/run/assemble.py `finish`; again before each later
attempt: runner/run/check.py), else when the run's summary is written. The check is the runner's command, not the
agent's work: what it writes (`__pycache__/` from `python -m pytest`, coverage files, reports) is not the agent's
change, and a file it rewrites is recorded as the agent left it (what a failed attempt's check wrote before the
agent went on is in a later record).
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from runner.record.rundir import write_atomic, write_json
from runner.report.changes import ChangeTracker
from runner.tools.base import ToolContext
from runner.workspace.state import end_state


class ChangeRecord:
    def __init__(self, tracker: ChangeTracker, run_dir: Path, ctx: ToolContext) -> None:
        self.tracker = tracker
        self.run_dir = run_dir
        self.ctx = ctx  # its masker is read when the record is taken
        self._fields: dict[str, Any] | None = None
        # What was taken, unmasked, for landing (runner/run/land.py): the patch, the files it names, or the error.
        self.patch: str | None = None
        self.changed: list[str] | None = None
        self.error: str | None = None

    def take(self, again: bool = False) -> None:
        """Take the record now: its files are written, its summary fields kept for the end. `again`: taken anew
        (the check failed and the agent went on; what that check wrote is in it)."""
        if self._fields is not None and not again:
            return
        tracker = self.tracker
        try:
            patch, changed = tracker.patch()
            ignored = tracker.ignored()
            state = end_state(tracker.workspace, changed, tracker.base)
        except (OSError, subprocess.SubprocessError) as exc:
            self._fields = {"changed_files": None, "changes_error": str(exc)}
            self.error = str(exc)
            return
        self.patch, self.changed = patch, changed
        self._fields = {"changed_files": changed, "ignored_new_files": ignored.summary() if ignored else None}
        masker = self.ctx.masker
        # A secret the agent wrote into a file is not copied into the artifacts either.
        for name, text in (("changes.patch", patch), ("ignored.patch", ignored.patch if ignored else "")):
            if text:
                write_atomic(self.run_dir / name, masker.mask(text)[0] if masker is not None else text)
            elif again:
                (self.run_dir / name).unlink(missing_ok=True)
        # The state the run left the workspace in (sealed): a resume checks it before going on.
        write_json(self.run_dir / "workspace.json", state)

    def write(self, data: dict[str, Any]) -> None:
        """The summary finisher: the frozen record, or the workspace as it is now."""
        self.take()
        assert self._fields is not None
        data.update(self._fields)
