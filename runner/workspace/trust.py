"""What untrusted content may change about a run: only ever less.

Trusted: flags, the process environment, `--env-file` files the command line names, the
policy, and a task file the command line names outside the workspace and its repository.
Untrusted: the workspace (a `.env` there is never read), a task file inside the workspace or
its repository, and task text on stdin (in CI it is what the event brought: an issue body, a
comment, a pull request's title — the action passes its `task:` text that way). Such a
task's front matter may lower budgets and name a policy that is *intersected* with the
trusted one (a target is allowed only if both allow it); it may not pick the model, raise a
budget, or replace the policy.
"""

from __future__ import annotations

import io
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dotenv import dotenv_values

from runner.core.inputfile import read_input_text
from runner.core.outcome import UsageError
from runner.workspace.git import find_repo

# Budgets front matter may only lower; anything else it sets is ignored when untrusted.
NARROWING = ("max_turns", "timeout", "max_tokens", "max_cost_usd", "max_output_tokens")


@dataclass(frozen=True)
class EnvFiles:
    """`--env-file` values, merged in order (a later file wins), below the process environment."""

    paths: tuple[Path, ...] = ()
    values: Mapping[str, str] = field(default_factory=dict)

    def environ(self) -> dict[str, str]:
        """The process environment over the files: what `AGENT_RUN_*` lookups see."""
        return {**self.values, **os.environ}


def load_env_files(raw: list[str] | tuple[str, ...]) -> EnvFiles:
    paths, values = [], {}
    for spec in raw:
        path = Path(spec).expanduser().resolve()
        if not path.exists():
            raise UsageError(f"--env-file {spec}: no such file")
        try:  # a regular file of at most 16 MiB (runner/core/inputfile.py), else exit 2 naming --env-file
            found = dotenv_values(stream=io.StringIO(read_input_text(path, "--env-file")))
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"--env-file {spec}: cannot read: {exc}") from None
        values.update({k: v for k, v in found.items() if v is not None})
        paths.append(path)
    return EnvFiles(tuple(paths), values)


def task_is_trusted(task_path: Path | None, workspace: Path) -> bool:
    """Only a task file outside the workspace (and its repository) is the workflow's own. Text on stdin
    (`task_path` None) is not: where it came from is unknowable, and in CI it is usually the event's."""
    if task_path is None:
        return False
    repo = find_repo(workspace)
    roots = [workspace, *([repo.top] if repo else [])]
    return not any(task_path.is_relative_to(root) for root in roots)


def narrow(trusted: Mapping[str, Any], front_matter: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The settings an untrusted front matter leaves: budgets lowered where it asks, nothing else.

    Returns the overrides to apply and a note per key that was ignored or could not lower."""
    out: dict[str, Any] = {}
    ignored: list[str] = []
    for key, value in front_matter.items():
        if key not in NARROWING:
            ignored.append(f"{key} (an untrusted task may only lower budgets)")
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            ignored.append(f"{key}: {value!r} is not a number")  # untrusted text chooses the type too
            continue
        current = trusted.get(key)
        if current is None or value < current:
            out[key] = value
        elif value > current:
            ignored.append(f"{key}: {value} is above the trusted {current}")
    return out, ignored
