"""A run names its directory to whoever started it, as soon as the directory exists.

`agent-run batch` learns each task's run directory here rather than from the summary the task prints at
its end: a task killed before it printed anything (SIGKILL, the OOM killer) still has a run directory that
can be resumed, and batch.json must name it. The batch gives each task a file path in
`AGENT_RUN_RUN_DIR_FILE`; the run writes its directory's absolute path there (atomically, one line) right
after creating it. See docs/batch.md.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from runner.record.atomic import atomic_write

RUN_DIR_FILE_ENV = "AGENT_RUN_RUN_DIR_FILE"


def announce_run_dir(run_dir: Path) -> None:
    """Write `run_dir` to the file AGENT_RUN_RUN_DIR_FILE names, once: the variable is removed, so nothing
    this process starts later (a second record, a subprocess) writes over it."""
    path = os.environ.pop(RUN_DIR_FILE_ENV, None)
    if not path:
        return
    with contextlib.suppress(OSError):  # the batch then reports the task without its run dir, as before
        atomic_write(Path(path), os.fsencode(run_dir) + b"\n")


def read_announced(path: Path) -> str | None:
    """The run directory a task announced in `path`, or None when it never created one."""
    try:
        text = os.fsdecode(path.read_bytes().strip())
    except OSError:
        return None
    return text or None
