"""Subagent profiles: Markdown files with YAML front matter, the format Claude Code's agents use.

    ---
    name: reviewer
    description: Reviews a diff for bugs; read-only.
    tools: read, grep, glob, Bash(git diff:*)
    model: inherit
    max_turns: 12
    mode: agent
    ---
    You review code. ...

Found in trusted directories first (`--agents DIR`, the policy's `subagents.profiles`), then the
workspace's `.agents/agents/` and `.claude/agents/` (repository content); the first profile of a
name wins, and the built-in `general` (every tool the run may use) is there unless a trusted file
names itself `general`. A repository profile never takes a trusted name (the built-in's or a trusted
profile's, compared case-insensitively): a rule or `--approve task:agent:NAME` written for the
trusted one must not start the repository's child, with its prompt and model. It is not loaded, and
`discover` reports it apart (`shadowed`), for a `warning` event with code `profile_shadowed`.
A profile only ever **narrows** (docs/subagents.md): `tools` picks from the parent's tools (`disallowedTools`
first), `paths` narrows the files it may touch (runner/subagents/scope.py), `mode` may drop `full_access`, never add
it. Keys we do not know (`color`,
`permissionMode`, …) are warned about and ignored; a profile that cannot be read is skipped with
a warning.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner.core.inputfile import read_input_text
from runner.subagents.scope import Scope, ScopeError, parse_names, parse_scope
from runner.workspace.skills import SkillError, front_matter, parse_allowed

SOURCES = (".agents/agents", ".claude/agents")
KNOWN_KEYS = frozenset({"name", "description", "tools", "disallowedTools", "paths", "model", "max_turns", "mode"})
MODES = ("agent", "full_access")
# Claude Code's model aliases mean "a Claude model": on an OpenAI-compatible endpoint, the run's own.
INHERIT = frozenset({"inherit", "sonnet", "opus", "haiku"})
MAX_PROFILES = 50
MAX_DESCRIPTION = 300
GENERAL = "general"


class ProfileError(ValueError):
    pass


@dataclass(frozen=True)
class Profile:
    name: str
    description: str
    body: str  # the profile's instructions, for the child's system prompt
    tools: tuple[tuple[str, str | None], ...] | None  # (tool, shell pattern); None: every tool the parent has
    model: str | None  # None: the parent's
    max_turns: int | None
    mode: str | None  # None: the parent's
    path: Path | None  # None: built in
    trusted: bool
    disallowed: tuple[str, ...] = ()  # tool names or globs never offered (checked before `tools`)
    scope: Scope | None = None  # the workspace paths it may read and write (runner/subagents/scope.py)


BUILTIN = Profile(GENERAL, "any subtask", "", None, None, None, None, None, True)


def load_profile(path: Path, trusted: bool, aliases: Mapping[str, str]) -> tuple[Profile, list[str]]:
    """The profile in `path`, and warnings (unknown keys, model aliases). `aliases`: other agents' tool names
    (runner/subagents/builtin.py ALIASES; not imported here: it imports the task tool, which imports this)."""
    try:
        # A trusted (--agents) profile is the workflow's own file: read as one (symlinks followed, exit 2 for a
        # FIFO or a device); a repository profile never through a symlink (runner/workspace/repofile.py).
        text = read_input_text(path, "--agents") if trusted else None
        meta, body = front_matter(path, "a profile", text)
    except SkillError as exc:
        raise ProfileError(str(exc)) from None
    if not isinstance(meta, dict):
        raise ProfileError(f"{path}: front matter must be a mapping")
    warnings = [f"{path}: unknown key {k!r} ignored" for k in meta if k not in KNOWN_KEYS]
    name = str(meta.get("name") or path.stem).strip()
    if not name or any(c.isspace() or c in "*?[]{}" for c in name):
        raise ProfileError(f"{path}: name {name!r} must be one word without glob characters")
    if not meta.get("description"):
        raise ProfileError(f"{path}: front matter needs a description (the parent chooses by it)")
    try:
        tools = parse_allowed(meta.get("tools"), str(path), aliases)
    except SkillError as exc:
        raise ProfileError(str(exc).replace("allowed-tools", "tools")) from None
    try:
        disallowed = parse_names(meta.get("disallowedTools"), str(path), aliases)
        scope = parse_scope(meta.get("paths"), str(path))
    except ScopeError as exc:
        raise ProfileError(str(exc)) from None
    model = meta.get("model")
    if model is not None and str(model).strip().lower() in INHERIT:
        if str(model).strip().lower() != "inherit":
            warnings.append(f"{path}: model {model!r} is a Claude alias; the run's model is used")
        model = None
    turns = meta.get("max_turns")
    if turns is not None and (not isinstance(turns, int) or isinstance(turns, bool) or turns < 1):
        raise ProfileError(f"{path}: max_turns must be a positive integer (got {turns!r})")
    mode = meta.get("mode")
    if mode is not None and mode not in MODES:
        raise ProfileError(f"{path}: mode must be one of {', '.join(MODES)} (got {mode!r})")
    description = " ".join(str(meta["description"]).split())[:MAX_DESCRIPTION]
    return Profile(name, description, body.strip(), tools, str(model).strip() if model else None, turns, mode,
                   path, trusted, disallowed, scope), warnings


@dataclass
class Found:
    """What discovery found: the profiles by name, warnings (stderr), and the repository profiles refused
    for taking a trusted name (each a `profile_shadowed` warning event as well)."""

    profiles: dict[str, Profile]
    warnings: list[str]
    shadowed: list[str]


def discover(workspace: Path, trusted_dirs: list[Path], untrusted_dirs: Sequence[Path] = (), *,
             aliases: Mapping[str, str]) -> Found:
    """Profiles by name, in a stable order (the `task` tool's description lists them), and warnings.
    `untrusted_dirs` are searched after the trusted ones, as repository content (a replay's recorded dirs);
    `aliases` as load_profile's."""
    roots = ([(d, True) for d in trusted_dirs] + [(d, False) for d in untrusted_dirs]
             + [((workspace / s).resolve(), False) for s in SOURCES])
    found: dict[str, Profile] = {}
    out = Found(found, [], [])
    for root, trusted in roots:
        for path in sorted(root.glob("*.md")) if root.is_dir() else []:
            if not trusted and (path.is_symlink() or not path.resolve().is_relative_to(workspace.resolve())):
                continue  # a repository profile must not reach outside the workspace
            try:
                profile, notes = load_profile(path, trusted, aliases)
            except (ProfileError, OSError, UnicodeDecodeError) as exc:
                out.warnings.append(f"profile skipped: {exc}")
                continue
            out.warnings.extend(notes)
            if not trusted and (owner := _trusted_owner(profile.name, found)) is not None:
                shown = path.relative_to(workspace) if path.is_relative_to(workspace) else path
                out.shadowed.append(f"{shown}: repository profile {profile.name!r} takes the name of the "
                                    f"trusted profile {owner}; not loaded")
                continue
            if profile.name in found:
                out.warnings.append(f"{path}: profile {profile.name!r} is already defined by "
                                    f"{found[profile.name].path}; ignored")
                continue
            found[profile.name] = profile
            if len(found) >= MAX_PROFILES:
                out.profiles = _with_builtin(found)
                return out
    out.profiles = _with_builtin(found)
    return out


def _trusted_owner(name: str, found: dict[str, Profile]) -> str | None:
    """The trusted profile `name` would shadow, described, or None. Case-insensitive: a policy rule
    `agent:general` must not be dodged by, nor a reader confuse it with, a repository `General`."""
    key = name.casefold()
    owner = next((p for n, p in found.items() if p.trusted and n.casefold() == key), None)
    if owner is not None:
        return f"{owner.name!r} ({owner.path})"
    return f"{GENERAL!r} (built in)" if key == GENERAL.casefold() else None


def _with_builtin(found: dict[str, Profile]) -> dict[str, Profile]:
    return found if GENERAL in found else {GENERAL: BUILTIN, **found}


def trusted_dirs(given: list[str], policy_path: str, section: dict[str, Any]) -> list[Path]:
    """`--agents DIR` (relative to the current directory), then the policy's `subagents.profiles`
    (relative to the policy file's directory)."""
    base = Path(policy_path).parent
    return ([Path(d).expanduser().resolve() for d in given]
            + [(base / Path(d).expanduser()).resolve() for d in section.get("profiles") or []])


def recorded_dirs(summary: dict[str, Any] | None, home: Path) -> list[str]:
    """The profile directories a recorded run had from --agents, for its replay, where they still exist.
    Named by a summary.json (a file in a run directory, not a flag): a replay reads them as repository
    content, never trusted, and only inside the workspace."""
    dirs = {(home / p["path"]).parent.resolve() for p in (summary or {}).get("subagent_profiles") or []
            if p.get("trusted") and isinstance(p.get("path"), str) and p["path"] != "builtin"}
    return sorted(str(d) for d in dirs if d.is_dir() and d.is_relative_to(home.resolve()))
