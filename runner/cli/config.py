"""`agent-run config show`: every setting with its value and where it came from (layer, file, dotted key), as a run
started here with these options would see it (runner/engine/settings.py): the settings, the policy sections the
user's config may set beneath the policy's (`compaction`, `truncation`, `doomLoop`), the mode, and the user's
permission rules, each named when a policy rule shadows it (runner/policy/shadow.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import click
from dotenv import dotenv_values
from pydantic import ValidationError

from runner.context.manager import POLICY_KEYS as COMPACTION_SECTION_KEYS
from runner.context.manager import ContextConfig
from runner.context.prune import ToolKinds
from runner.core.outcome import UsageError
from runner.engine.settings import COMPACTION_KEYS, MODEL_KEYS, SUBAGENT_KEYS, Settings, load_settings, policy_layer
from runner.engine.userconf import ConfigError, read_config, user_config_file
from runner.guards.denials import DEFAULT_MAX_DENIALS
from runner.guards.loops import POLICY_KEYS as LOOP_KEYS
from runner.guards.loops import LoopConfig
from runner.policy.jsonc import PolicyError
from runner.policy.load import load_policy
from runner.policy.model import Policy
from runner.policy.shadow import from_file, why
from runner.run.option_table import OPTIONS
from runner.run.repoconfig import Narrowed, repository_narrowed, with_user_sections
from runner.tools.truncate import POLICY_KEYS as TRUNCATION_KEYS
from runner.tools.truncate import Limits

SECRET = ("api_key",)


@click.group("config")
def config() -> None:
    """The settings a run would see (docs/configuration.md)."""


@config.command("show")
@click.option("--policy", "policy", metavar="PATH|NAME", help="As `run --policy`. [default: AGENT_RUN_POLICY, else "
              "default]")
@click.option("--env-file", "env_files", metavar="PATH", multiple=True, help="As `run --env-file` (repeatable).")
@click.option("--workspace", default=".", show_default=True, metavar="DIR",
              help="As `run --workspace`: its .agents/agent-run.toml may lower settings.")
def show(policy: str | None, env_files: tuple[str, ...], workspace: str) -> None:
    """Print each setting: its name, value, layer (environment, env-file, repository, policy, user, default) and the
    file and dotted key (or variable) that set it; then the policy sections the user's config may set, the mode
    and the user's permission rules (one the policy's rules shadow says so)."""
    spec = policy or os.environ.get("AGENT_RUN_POLICY") or "default"
    files = tuple(Path(f).resolve() for f in env_files)
    try:
        loaded = load_policy(spec)
        user_path = user_config_file()
        user, written = read_config(user_path)
        merged = with_user_sections(loaded)
        narrowed = repository_narrowed(Path(workspace).resolve(), load_settings({}, files,
                                                                                 policy_layer(merged.sections)))
    except (PolicyError, ConfigError, ValidationError) as exc:
        raise click.UsageError(str(exc)) from None
    except UsageError as exc:
        raise click.UsageError(exc.reason) from None
    if narrowed.ignored:
        click.echo(f"agent-run: warning: {narrowed.ignored}", err=True)
    layers = _Layers(loaded, merged, user_path, user, written)
    _settings(layers, files, narrowed, Path(workspace).resolve())
    for line in (*_sections(layers), _mode(layers), _max_denials(layers), *_rules(layers)):
        click.echo(" ".join(line))


class _Layers:
    """The policy as loaded, the same with the user's config beneath it, and the user's file read."""

    def __init__(self, loaded: Policy, merged: Policy, user_path: Path, user: dict[str, Any],
                 written: dict[str, str]) -> None:
        self.loaded, self.merged, self.user_path, self.user, self.written = loaded, merged, user_path, user, written

    def policy(self, key: str) -> list[str]:
        return ["policy", self.loaded.path, key]

    def user_key(self, key: str) -> list[str]:
        """A key of the user's file as it wrote it (`truncation.preset`, `agents.runtime.truncation.preset`)."""
        head, _, rest = key.partition(".")
        return ["user", str(self.user_path), ".".join(filter(None, (self.written.get(head, head), rest)))]

    def in_section(self, section: str, key: str) -> list[str] | None:
        if key in self.loaded.sections.get(section, {}):
            return self.policy(f"{section}.{key}")
        given = self.user.get(section)
        return self.user_key(f"{section}.{key}") if isinstance(given, dict) and key in given else None


def _settings(layers: _Layers, files: tuple[Path, ...], narrowed: Narrowed, workspace: Path) -> None:
    in_files = [(f, {k.upper() for k in dotenv_values(f)}) for f in files]
    environ = {k.upper() for k in os.environ}
    policy_keys, own = _policy_keys(), policy_layer(layers.loaded.sections)
    from_sections = {name: key for key, name in COMPACTION_KEYS.items()}
    for name in Settings.model_fields:
        variables = _variables(name)
        where: list[str]
        if name in narrowed.lowered:  # it lowers whatever layer set the value: the value shown is its
            where = ["repository", str(workspace / ".agents" / "agent-run.toml"), narrowed.lowered[name]]
        elif found := next((v for v in variables if v in environ), None):
            where = ["environment", found]
        elif found_in := next(((f, v) for f, names in reversed(in_files) for v in variables if v in names), None):
            where = ["env-file", str(found_in[0]), found_in[1]]
        elif name in own:
            where = layers.policy(policy_keys.get(name, name))
        elif name in from_sections and (found_key := layers.in_section("compaction", from_sections[name])):
            where = found_key
        elif name in layers.user and not isinstance(layers.user[name], dict):  # a table is a section
            where = layers.user_key(name)
        else:
            where = ["default"]
        click.echo(" ".join([name, _shown(name, getattr(narrowed.settings, name)), *where]))


def _sections(layers: _Layers) -> list[list[str]]:
    """`compaction.*` (those that are not settings), `truncation.*`, `doomLoop.*`: the value a run reads, from the
    policy's section with the user's beneath it (a truncation limit the preset set: the preset's source)."""
    sections = layers.merged.sections
    compaction = ContextConfig.from_policy(sections.get("compaction", {}), None, ToolKinds())
    truncation = sections.get("truncation", {})
    limits = Limits.from_policy(truncation)
    values = {**{f"compaction.{k}": getattr(compaction, f) for k, f in COMPACTION_SECTION_KEYS.items()
                 if k not in COMPACTION_KEYS},
              "truncation.preset": truncation.get("preset", "default"),
              **{f"truncation.{k}": getattr(limits, f) for k, f in TRUNCATION_KEYS.items()},
              **{f"doomLoop.{k}": getattr(LoopConfig.from_policy(sections.get("doomLoop", {})), f)
                 for k, f in LOOP_KEYS.items()}}
    preset = layers.in_section("truncation", "preset")
    out = []
    for dotted, value in values.items():
        section, key = dotted.split(".", 1)
        where = layers.in_section(section, key)
        if where is None and dotted in ("truncation.maxLines", "truncation.maxBytes"):
            where = preset
        out.append([dotted, _shown(dotted, value), *(where or ["default"])])
    return out


def _max_denials(layers: _Layers) -> list[str]:
    value = layers.merged.sections.get("permission", {}).get("maxDenials", DEFAULT_MAX_DENIALS)
    return ["permission.maxDenials", str(value), *(layers.in_section("permission", "maxDenials") or ["default"])]


def _mode(layers: _Layers) -> list[str]:
    if layers.loaded.mode_given:
        where = layers.policy("mode")
    elif "mode" in layers.user:
        where = layers.user_key("mode.default" if isinstance(layers.user["mode"], dict) else "mode")
    else:
        where = ["default"]
    return ["mode", layers.merged.mode, *where]


def _rules(layers: _Layers) -> list[list[str]]:
    """The user's permission rules (before the policy's: the last match decides), each with the policy rule that
    matches all it matches, when one does: such a rule never decides."""
    out = []
    for rule, later in from_file(layers.merged.rules, str(layers.user_path)):
        line = [f"permission.rules.{rule.index}", _shown("rule", {"domain": rule.domain, "pattern": rule.pattern.raw,
                                                                   "decision": rule.decision}),
                *layers.user_key(f"permission.rules.{rule.index}")]
        out.append([*line, f"({why(later)})"] if later is not None else line)
    return out


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
