"""The user's config file: `$XDG_CONFIG_HOME/agent-run/config.toml` (default `~/.config/agent-run/config.toml`), a
layer of `Settings` below the policy and above the defaults (runner/engine/settings.py), read through
pydantic-settings' TOML source.

It is the operator's (trusted): its keys are the `Settings` fields by name (`max_turns = 20`, `model = "…"`), in
the flat shape, or under `[agents.runtime]`, the nested shape of the design's ADR-0002. `normalize` makes the one
from the other at load, before anything reads a key, and refuses a key given in both shapes.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from importlib.abc import Traversable
from pathlib import Path
from typing import Any

from pydantic_settings import BaseSettings, TomlConfigSettingsSource

from runner.policy.load import user_config_dir

NESTED = ("agents", "runtime")  # where the ADR's nested shape keeps the runtime's settings


class ConfigError(ValueError):
    """The config file cannot be read, or says one key twice."""


def user_config_file(environ: Mapping[str, str] = os.environ) -> Path:
    """Where the user's config file is (whether or not it exists)."""
    return user_config_dir(environ) / "config.toml"


def normalize(data: dict[str, Any], file: str) -> tuple[dict[str, Any], dict[str, str]]:
    """The flat shape of a config file's `data`, and each flat key's dotted key as the file wrote it. Raises
    ConfigError for a key given in both shapes, or an `agents` table holding anything but `runtime`."""
    flat = {k: v for k, v in data.items() if k != NESTED[0]}
    written = {k: k for k in flat}
    agents = data.get(NESTED[0], {})
    if not isinstance(agents, dict) or set(agents) - {NESTED[1]} or not isinstance(agents.get(NESTED[1], {}), dict):
        raise ConfigError(f"{file}: `{NESTED[0]}` may hold only the table `{'.'.join(NESTED)}`")
    for key, value in agents.get(NESTED[1], {}).items():
        if key in flat:
            raise ConfigError(f"{file}: {key} is given in both shapes ({key} and {'.'.join(NESTED)}.{key}); "
                              "keep one")
        flat[key] = value
        written[key] = f"{'.'.join(NESTED)}.{key}"
    return flat, written


def read_config(path: Path) -> tuple[dict[str, Any], dict[str, str]]:
    """The file normalized (normalize); nothing when it does not exist. ConfigError when it is not TOML."""
    if not path.is_file():
        return {}, {}
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from None
    return normalize(data, str(path))


class UserConfigSource(TomlConfigSettingsSource):
    """pydantic-settings' TOML source over the user's file, normalized to the flat shape as it is read. Its tables
    are policy sections (`[compaction]`, `[truncation]`, …: runner/run/repoconfig.py), never a setting: no setting
    is a table, and `compaction` names both a setting (`compaction = false`) and a section."""

    def __init__(self, settings_cls: type[BaseSettings], path: Path) -> None:
        super().__init__(settings_cls, toml_file=path)

    def _read_file(self, file_path: Path | Traversable) -> dict[str, Any]:
        flat = normalize(super()._read_file(file_path), str(file_path))[0]
        return {key: value for key, value in flat.items() if not isinstance(value, dict)}
