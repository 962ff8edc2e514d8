"""The config files, as a run reads them beside its settings (runner/engine/userconf.py reads the files).

- The user's config may give the policy sections `compaction`, `truncation` and `doomLoop`, `permission.rules`,
  `permission.maxDenials` and `mode`: beneath the policy's own (`with_user_sections`).
- The repository's config file, `.agents/agent-run.toml` in the workspace, has the user's config's shape but is
  repository content, so it may only narrow — lower a budget, as an untrusted task's front matter may
  (runner/workspace/trust.py narrow). A key it may not set is ignored and named in a `warning` event
  `config_ignored`; the rest applies. runner/policy/agentfiles.py protects it as it does the skills directories.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Any

import pydantic

from runner.core.events import RunWarning
from runner.core.outcome import UsageError
from runner.engine.recorder import Recording
from runner.engine.settings import Settings
from runner.engine.userconf import ConfigError, read_config, user_config_file
from runner.policy.load import policy_schema_errors
from runner.policy.match import compile_rule_pattern
from runner.policy.model import Policy, Rule
from runner.workspace.trust import narrow

REPO_CONFIG_PATH = ".agents/agent-run.toml"
# The policy sections the user's config may give (flat, or under [agents.runtime] as the ADR nests them): below the
# policy's own, key by key.
USER_SECTIONS = ("compaction", "truncation", "doomLoop")
# The ADR's `mode.default` and `permission.rules`: flat `mode = "…"` (or `[mode] default = "…"`) and `[permission]`.
USER_POLICY_KEYS = ("mode", "permission")


def with_user_sections(policy: Policy) -> Policy:
    """`policy` with the user's config beneath it, each key checked by the policy schema first (exit 2 naming the
    file and key): its `compaction`, `truncation` and `doomLoop` keys and `permission.maxDenials` beneath the
    policy's own (the policy's win); its `permission.rules` before the policy's rules (the last match decides, so
    the policy's rules win, as an extending file's do); its `mode` only when no file of the policy's chain sets one
    (`--mode` beats both)."""
    path = user_config_file()
    try:
        values, written = read_config(path)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    given = user_policy_keys(values)
    if isinstance(given.get("mode"), dict) and set(given["mode"]) == {"default"}:
        given["mode"] = given["mode"]["default"]
    if not given:
        return policy
    for err in policy_schema_errors(given):
        where = ".".join([written[str(err.path[0])], *(str(p) for p in list(err.path)[1:])])
        raise UsageError(f"{path}: {where}: {err.message}")
    sections = dict(policy.sections)
    for key in USER_SECTIONS:
        if key in given:
            sections[key] = {**given[key], **sections.get(key, {})}
    if "maxDenials" in given.get("permission", {}):  # beneath the policy's, as the sections' keys are
        sections["permission"] = {"maxDenials": given["permission"]["maxDenials"], **sections.get("permission", {})}
    policy = dataclasses.replace(policy, sections=sections)
    rules = given.get("permission", {}).get("rules", [])
    if rules:
        policy = policy.with_rules([_rule(raw, i, path, written["permission"]) for i, raw in enumerate(rules)],
                                   first=True)
    return policy.with_mode(given["mode"]) if "mode" in given and not policy.mode_given else policy


def user_policy_keys(values: dict[str, Any]) -> dict[str, Any]:
    """What of the user's config goes beneath the policy: its sections (`compaction = false` is the setting, not the
    section) and its mode and permission keys."""
    return {k: v for k, v in values.items()
            if k in USER_POLICY_KEYS or (k in USER_SECTIONS and (k != "compaction" or isinstance(v, dict)))}


def _rule(raw: dict[str, Any], index: int, path: Path, key: str) -> Rule:
    try:
        pattern = compile_rule_pattern(raw["pattern"])
    except ValueError as exc:
        raise UsageError(f"{path}: {key}.rules.{index}.pattern: {exc}") from None
    return Rule(raw["domain"], pattern, raw["decision"], str(path), index)


@dataclasses.dataclass(frozen=True)
class Narrowed:
    """`settings` as the workspace's config leaves them: the keys it lowered (each as the file wrote it) and what
    it may not set (the warning's text, None when nothing was ignored)."""

    settings: Settings
    lowered: dict[str, str]
    ignored: str | None = None


def repository_narrowed(workspace: Path, settings: Settings) -> Narrowed:
    """`settings` narrowed by the workspace's `.agents/agent-run.toml` (a symlink is not read); UsageError (exit 2)
    when it is not TOML, says a key in both shapes or lowers one to a value that is not valid."""
    path = workspace / REPO_CONFIG_PATH
    try:
        # Not through a symlink anywhere on its way (`.agents` one too): repository content names no file outside it.
        inside = path.resolve() == workspace.resolve() / REPO_CONFIG_PATH
        values, written = read_config(path) if inside and path.is_file() else ({}, {})
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    if not values:
        return Narrowed(settings, {})
    lowered, ignored = narrow(settings.model_dump(), values)
    message = (f"{REPO_CONFIG_PATH} is repository content; it may only lower budgets; ignored: "
               f"{'; '.join(_as_written(note, written) for note in ignored)}") if ignored else None
    try:
        narrowed = Settings(**{**settings.model_dump(), **lowered}) if lowered else settings
    except pydantic.ValidationError as exc:
        raise UsageError(f"{REPO_CONFIG_PATH}: {exc.errors()[0]['msg']}") from None
    return Narrowed(narrowed, {key: written.get(key, key) for key in lowered}, message)


def repository_config(rec: Recording, settings: Settings) -> Settings:
    """`settings` narrowed by the workspace's config (repository_narrowed); what it may not set is a warning on
    stderr and a `warning` event `config_ignored`."""
    narrowed = repository_narrowed(rec.workspace, settings)
    if narrowed.ignored:
        print(f"agent-run: warning: {narrowed.ignored}", file=sys.stderr)
        rec.emit(RunWarning(code="config_ignored", message=narrowed.ignored))
    return narrowed.settings


def _as_written(note: str, written: dict[str, str]) -> str:
    """narrow's note, its key as the file wrote it (`agents.runtime.model`)."""
    key = note.split(" ")[0].rstrip(":")
    return written.get(key, key) + note.removeprefix(key)
