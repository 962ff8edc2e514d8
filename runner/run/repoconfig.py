"""The repository's config file, `.agents/agent-run.toml` in the workspace: the user's config file's shape
(runner/engine/userconf.py), but repository content, so it may only narrow — lower a budget, as an untrusted task's
front matter may (runner/workspace/trust.py narrow). A key it may not set is ignored and named in a `warning` event
`config_ignored`; the rest applies. runner/policy/agentfiles.py protects it as it does the skills directories."""

from __future__ import annotations

import sys

import pydantic

from runner.core.events import RunWarning
from runner.core.outcome import UsageError
from runner.engine.recorder import Recording
from runner.engine.settings import Settings
from runner.engine.userconf import ConfigError, read_config
from runner.workspace.trust import narrow

REPO_CONFIG_PATH = ".agents/agent-run.toml"


def repository_config(rec: Recording, settings: Settings) -> Settings:
    """`settings` narrowed by the workspace's `.agents/agent-run.toml` (a symlink is not read); exit 2 when it is not
    TOML or says a key in both shapes."""
    path = rec.workspace / REPO_CONFIG_PATH
    try:
        values, written = read_config(path) if path.is_file() and not path.is_symlink() else ({}, {})
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    if not values:
        return settings
    lowered, ignored = narrow(settings.model_dump(), values)
    if ignored:
        message = (f"{REPO_CONFIG_PATH} is repository content; it may only lower budgets; ignored: "
                   f"{'; '.join(_as_written(note, written) for note in ignored)}")
        print(f"agent-run: warning: {message}", file=sys.stderr)
        rec.emit(RunWarning(code="config_ignored", message=message))
    if not lowered:
        return settings
    try:
        return Settings(**{**settings.model_dump(), **lowered})
    except pydantic.ValidationError as exc:
        raise UsageError(f"{REPO_CONFIG_PATH}: {exc.errors()[0]['msg']}") from None


def _as_written(note: str, written: dict[str, str]) -> str:
    """narrow's note, its key as the file wrote it (`agents.runtime.model`)."""
    key = note.split(" ")[0].rstrip(":")
    return written.get(key, key) + note.removeprefix(key)
