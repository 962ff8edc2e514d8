"""The one builder of every command agent-run prints for a person: the denial's replay and rerun, the
resume of a run, the `next:` hint, the step summary's, the transcript's and JUnit's commands.

A printed command travels: it names `agent-run` from PATH (never this process's interpreter or venv) and
every path relative to the workspace root, where it is meant to be run — on the CI machine, or on a
laptop in another checkout after downloading the run directory. Only a path the person gave as an
absolute path outside the workspace stays absolute (runner/record/rundir.py `portable` places paths).
"""

from __future__ import annotations

import shlex

AGENT_RUN = "agent-run"
WHERE = "run from the workspace root"  # said next to printed commands where a reader may wonder


def command(*words: str) -> str:
    """`agent-run WORDS…`, each word shell-quoted."""
    return shlex.join([AGENT_RUN, *words])
