"""`agent-run config show`: every setting with its value and where it came from (layer, file, dotted key), as a run
started here with these options would see it (runner/engine/settings.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import click
from dotenv import dotenv_values
from pydantic import ValidationError

from runner.engine.settings import MODEL_KEYS, SUBAGENT_KEYS, Settings, load_settings, policy_layer
from runner.engine.userconf import ConfigError, read_config, user_config_file
from runner.policy.jsonc import PolicyError
from runner.policy.load import load_policy
from runner.run.option_table import OPTIONS

SECRET = ("api_key",)


@click.group("config")
def config() -> None:
    """The settings a run would see (docs/configuration.md)."""


@config.command("show")
@click.option("--policy", "policy", metavar="PATH|NAME", help="As `run --policy`. [default: AGENT_RUN_POLICY, else "
              "default]")
@click.option("--env-file", "env_files", metavar="PATH", multiple=True, help="As `run --env-file` (repeatable).")
def show(policy: str | None, env_files: tuple[str, ...]) -> None:
    """Print each setting: its name, value, layer (flag, environment, env-file, policy, user, default) and the file
    and dotted key (or variable) that set it."""
    spec = policy or os.environ.get("AGENT_RUN_POLICY") or "default"
    files = tuple(Path(f).resolve() for f in env_files)
    try:
        loaded = load_policy(spec)
        lower = policy_layer(loaded.sections)
        settings = load_settings({}, files, lower)
        user_path = user_config_file()
        user, written = read_config(user_path)
    except (PolicyError, ConfigError, ValidationError) as exc:
        raise click.UsageError(str(exc)) from None
    in_files = [(f, {k.upper() for k in dotenv_values(f)}) for f in files]
    environ = {k.upper() for k in os.environ}
    policy_keys = _policy_keys()
    for name in Settings.model_fields:
        variables = _variables(name)
        where: list[str]
        if found := next((v for v in variables if v in environ), None):
            where = ["environment", found]
        elif found_in := next(((f, v) for f, names in reversed(in_files) for v in variables if v in names), None):
            where = ["env-file", str(found_in[0]), found_in[1]]
        elif name in lower:
            where = ["policy", loaded.path, policy_keys.get(name, name)]
        elif name in user:
            where = ["user", str(user_path), written[name]]
        else:
            where = ["default"]
        click.echo(" ".join([name, _shown(name, getattr(settings, name)), *where]))


def _variables(name: str) -> list[str]:
    """The environment variables that set a field, upper case."""
    alias = Settings.model_fields[name].validation_alias
    choices = getattr(alias, "choices", None)
    return [str(c).upper() for c in choices] if choices else [f"AGENT_RUN_{name.upper()}"]


def _policy_keys() -> dict[str, str]:
    """Each field the policy may set -> its dotted policy key."""
    keys = {o.name: o.policy for o in OPTIONS if o.policy}
    keys |= {field: f"model.{key}" for key, field in MODEL_KEYS.items()}
    keys |= {field: f"subagents.{key}" for key, field in SUBAGENT_KEYS.items()}
    return keys


def _shown(name: str, value: Any) -> str:
    if value is None:
        return "-"
    if name in SECRET:
        return "***"
    if isinstance(value, list | dict):
        return json.dumps(value, separators=(",", ":"))
    return str(value)
