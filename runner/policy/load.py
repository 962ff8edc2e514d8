"""Load a policy file: JSONC → schema check → extends chain → compiled rules.

Every problem is a PolicyError `file:line:col: message`; nothing here prints or
exits, the CLI decides what a broken policy means (exit 2).
"""

from __future__ import annotations

import difflib
import json
import os
import re
import shlex
from collections.abc import Callable, Mapping
from functools import cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import jsonschema

from runner.core.inputfile import InputRefused, read_input_text
from runner.policy.domains import DOMAINS
from runner.policy.hooks import hook_errors, merged_hooks
from runner.policy.jsonc import Located, PolicyError, parse
from runner.policy.limits import HARD_LIMIT
from runner.policy.match import compile_pattern, compile_rule_pattern
from runner.policy.model import Policy, Rule, snapshot
from runner.policy.sandbox_config import SandboxConfigError, config_from, network_rules
from runner.record.rundir import portable


def shipped_dir() -> Path:
    """Shipped policies: inside the wheel, or the repo's `policies/` in a checkout."""
    packaged = resources.files("runner") / "_shipped_policies"
    if packaged.is_dir():
        return Path(str(packaged))
    return Path(__file__).resolve().parents[2] / "policies"


def shipped_names() -> list[str]:
    return sorted(p.stem for p in shipped_dir().glob("*.jsonc"))


def policy_ref(path: str, workspace: Path) -> str:
    """How a printed command names a policy: a shipped one by its name, a file relative to the workspace."""
    resolved = Path(path)
    if resolved.parent == shipped_dir() and resolved.suffix == ".jsonc":
        return resolved.stem
    return portable(resolved, workspace)


def resolve_policy_path(spec: str, base: Path | None = None) -> Path:
    """A bare name (`strict`) is a shipped policy; anything else is a path."""
    if "/" not in spec and "\\" not in spec and not spec.endswith((".jsonc", ".json", ".json5")):
        path = shipped_dir() / f"{spec}.jsonc"
        if not path.is_file():
            raise FileNotFoundError(f"no shipped policy named {spec!r} (have: {', '.join(shipped_names())})")
        return path
    path = Path(spec).expanduser()
    if base is not None and not path.is_absolute():
        path = base / path
    return path.resolve()


@cache
def _validator() -> jsonschema.Draft202012Validator:
    import jsonschema  # ~35 ms: only when a policy is validated, never for --help or a shipped policy

    schema = json.loads((shipped_dir() / "policy.schema.json").read_text(encoding="utf-8"))
    return jsonschema.Draft202012Validator(schema)


def schema_errors(located: Located, file: str) -> list[PolicyError]:
    """Every schema error, in file order, each located at the offending key or value. The rules a plain check
    finds valid are left out of what jsonschema walks (a 5,000-rule policy: ~130 ms of its load), and the
    rest keep their own index in the errors, so what is reported is what a full walk reports."""
    value, kept = _checked_rules_removed(located.value)
    found = sorted(_locate(err, located, kept) for err in _validator().iter_errors(value))
    return [PolicyError(file, line, col, message) for (line, col), message in found]


def _checked_rules_removed(value: Any) -> tuple[Any, list[int] | None]:
    """The document with the rules that `_plain_rule_check` passes taken out, and the original index of each
    rule left (None: nothing taken out)."""
    permission = value.get("permission") if isinstance(value, dict) else None
    rules = permission.get("rules") if isinstance(permission, dict) else None
    check = _plain_rule_check()
    if not isinstance(permission, dict) or not isinstance(rules, list) or check is None:
        return value, None
    kept = [i for i, rule in enumerate(rules) if not check(rule)]
    if len(kept) == len(rules):
        return value, None
    return {**value, "permission": {**permission, "rules": [rules[i] for i in kept]}}, kept


@cache
def _plain_rule_check() -> Callable[[Any], bool] | None:
    """True for a rule the schema's rule definition accepts, read from that definition (enums, string types,
    minLength, required, no other keys); None when the definition uses anything else (then jsonschema walks
    every rule, as before)."""
    schema = _validator().schema
    if not isinstance(schema, Mapping):  # a boolean schema: no rule definition to read
        return None
    try:
        item = schema["properties"]["permission"]["properties"]["rules"]["items"]
    except (KeyError, TypeError):
        return None
    props, required = item.get("properties", {}), set(item.get("required", []))
    if set(item) - {"type", "additionalProperties", "required", "properties", "description"} or \
            item.get("type") != "object" or item.get("additionalProperties") is not False:
        return None
    if any(set(p) - {"enum", "type", "minLength", "description"} or p.get("type", "string") != "string"
           for p in props.values()):
        return None

    def ok(rule: Any) -> bool:
        if not isinstance(rule, dict) or not required <= rule.keys() or not rule.keys() <= props.keys():
            return False
        for key, v in rule.items():
            p = props[key]
            if "enum" in p and v not in p["enum"]:
                return False
            if "type" in p and not (isinstance(v, str) and len(v) >= p.get("minLength", 0)):
                return False
        return True
    return ok


def policy_schema_errors(doc: dict[str, Any]) -> list[jsonschema.ValidationError]:
    """The schema's errors for a policy-shaped `doc` not read from a policy file (the user's config's sections)."""
    return sorted(_validator().iter_errors(doc), key=lambda e: list(map(str, e.path)))


def validate(located: Located, file: str) -> None:
    """Raise the schema error that comes first in the file."""
    errors = schema_errors(located, file)
    if errors:
        raise errors[0]


def check_policy(spec: str) -> list[PolicyError]:
    """Every problem `policy check` can report: all schema and regex errors of the file, else the
    first problem of its extends chain."""
    try:
        path = resolve_policy_path(spec)
        text = read_input_text(path, "policy")
        located = parse(text, str(path))
    except PolicyError as exc:
        return [exc]
    except InputRefused as exc:
        return [PolicyError(spec, 1, 1, exc.detail, where=exc.option)]
    except (OSError, UnicodeDecodeError) as exc:
        return [PolicyError(spec, 1, 1, f"cannot read policy: {getattr(exc, 'strerror', None) or exc}")]
    if not isinstance(located.value, dict):
        return [PolicyError(str(path), 1, 1, "a policy must be a JSON object")]
    errors = schema_errors(located, str(path))
    for section in ("permission", "risk"):
        errors += _pattern_errors(located, str(path), section)
    errors += hook_errors(located, str(path))
    if errors:
        return sorted(errors, key=lambda e: (e.line, e.col))
    try:
        load_policy(str(path))
    except PolicyError as exc:
        return [exc]
    return []


def _pattern_errors(located: Located, file: str, section: str) -> list[PolicyError]:
    """The patterns of `section`'s rules (permission, risk) that do not compile, each located."""
    value = located.value.get(section)
    rules = value.get("rules", []) if isinstance(value, dict) else []
    errors = []
    for i, rule in enumerate(rules if isinstance(rules, list) else []):
        if isinstance(rule, dict) and isinstance(rule.get("pattern"), str):
            try:
                compile_rule_pattern(rule["pattern"])
            except ValueError as exc:
                line, col = located.position((section, "rules", i, "pattern"))
                errors.append(PolicyError(file, line, col, str(exc)))
    return errors


def policy_from_snapshot(data: dict[str, Any], path: str, base: Path | None = None) -> Policy:
    """Rebuild the policy a run used from its policy.json (for replay, resume and simulate). `base`: the
    workspace root its file references are relative to (runner.policy.load.portable_snapshot): they are
    made absolute again, so the hard limits protect the real files."""
    def place(ref: str) -> str:
        return resolve_ref(ref, base) if base is not None else ref

    files = [place(str(f)) for f in data.get("files", [])]
    named = set(map(str, data.get("files", [])))
    rules = [Rule(r["domain"], compile_pattern(_placed_limit(r)), r["decision"],
                  place(str(r["source"])) if str(r.get("source")) in named else r.get("source", path),
                  r.get("index", i))
             for i, r in enumerate(data.get("permission", {}).get("rules", []))]
    sections = {k: v for k, v in data.items() if k not in ("mode", "files", "narrowed_by")}
    narrowing = tuple(policy_from_snapshot(d, path, base) for d in data.get("narrowed_by", []))
    return Policy(place(path), data.get("mode", "agent"), rules, files, sections, data, narrowing)


def portable_snapshot(data: dict[str, Any], workspace: Path) -> dict[str, Any]:
    """policy.json as a run writes it: each policy file named as a printed command names it (a shipped policy
    by its name, a workspace file relative to the root; `policy_ref`), so a run directory names no path of
    the machine it ran on and a downloaded one resumes in another checkout (`policy_from_snapshot` with
    `base` reads it back). A hard limit on a shipped policy names the shipped directory SHIPPED_DIR."""
    files = [str(f) for f in data.get("files", [])]
    out = {**data, "files": [policy_ref(f, workspace) for f in files]}
    permission = data.get("permission")
    if isinstance(permission, dict) and isinstance(permission.get("rules"), list):
        out["permission"] = {**permission, "rules": [
            {**r, "source": policy_ref(str(r["source"]), workspace)} if r.get("source") in files else
            _portable_limit(r) for r in permission["rules"]]}
    if data.get("narrowed_by"):
        out["narrowed_by"] = [portable_snapshot(d, workspace) for d in data["narrowed_by"]]
    return out


# How a hard limit in policy.json names the trusted directories outside the workspace that are where agent-run is
# installed, or the user's home, on the machine the run was made on: the rule protecting a shipped policy
# (`regex:fs:<shipped policies>/default\.jsonc(/.*)?`) or the user's config directory (`regex:fs:<user config>(/.*)?`)
# names no path of that machine, and `policy_from_snapshot` puts this machine's directory back. The escaped path of
# a real directory never holds a placeholder (re.escape escapes the space).
SHIPPED_DIR = "<shipped policies>"
USER_CONFIG_DIR = "<user config>"


def user_config_dir(environ: Mapping[str, str] = os.environ) -> Path:
    """The user's agent-run config directory, `$XDG_CONFIG_HOME/agent-run` (default `~/.config/agent-run`), whether
    or not it exists: trusted configuration (runner/engine/userconf.py), protected from the agent."""
    base = environ.get("XDG_CONFIG_HOME") or str(Path(environ.get("HOME") or Path.home()) / ".config")
    return Path(base) / "agent-run"


def _places() -> list[tuple[str, Path]]:
    """Each placeholder with the directories it stands for on this machine (as given, and resolved)."""
    return [(name, d) for name, place in ((SHIPPED_DIR, shipped_dir()), (USER_CONFIG_DIR, user_config_dir()))
            for d in dict.fromkeys((place, place.resolve()))]


def _portable_limit(rule: dict[str, Any]) -> dict[str, Any]:
    """A hard limit on a trusted directory of this machine (or a file in it), named by its placeholder; any other
    rule as it is."""
    pattern = str(rule.get("pattern", ""))
    if rule.get("source") != HARD_LIMIT:
        return rule
    for name, place in _places():
        prefix = "regex:fs:" + re.escape(str(place))
        rest = pattern[len(prefix):]
        if pattern.startswith(prefix) and rest[:1] in ("/", "("):
            return {**rule, "pattern": f"regex:fs:{name}{rest}"}
    return rule


def _placed_limit(rule: dict[str, Any]) -> str:
    """The pattern of a recorded rule, a hard limit's placeholder made this machine's directory again."""
    pattern = str(rule["pattern"])
    if rule.get("source") != HARD_LIMIT:
        return pattern
    for name, place in ((SHIPPED_DIR, shipped_dir()), (USER_CONFIG_DIR, user_config_dir())):
        placeholder = f"regex:fs:{name}"
        if pattern.startswith(placeholder) and pattern[len(placeholder):][:1] in ("/", "("):
            return "regex:fs:" + re.escape(str(place.resolve())) + pattern[len(placeholder):]
    return pattern


def resolve_ref(ref: str, base: Path) -> str:
    """A policy file as `policy_ref` named it, made absolute: a shipped name, else a path relative to `base`."""
    if "/" not in ref and not ref.endswith(".jsonc") and (shipped_dir() / f"{ref}.jsonc").is_file():
        return str(shipped_dir() / f"{ref}.jsonc")
    path = Path(ref).expanduser()
    return str(path if path.is_absolute() else (base / path).resolve())


def _locate(err: jsonschema.ValidationError, located: Located,
            kept: list[int] | None = None) -> tuple[tuple[int, int], str]:
    path = tuple(err.absolute_path)
    if kept is not None and path[:2] == ("permission", "rules") and len(path) > 2 and isinstance(path[2], int):
        path = (*path[:2], kept[path[2]], *path[3:])  # the rule's index in the file, not in what was walked
    where = _dotted(path)
    if err.validator == "additionalProperties" and isinstance(err.instance, dict) and isinstance(err.schema, Mapping):
        allowed = set(err.schema.get("properties", {}))
        unknown = sorted((k for k in err.instance if k not in allowed),
                         key=lambda k: located.position((*path, k), key=True))
        hint = f" (expected one of: {', '.join(sorted(allowed))})" if allowed else ""
        close = difflib.get_close_matches(unknown[0], sorted(allowed), n=1)
        if close:
            hint = f": did you mean '{close[0]}'?{hint}"
        return located.position((*path, unknown[0]), key=True), f"unknown key '{unknown[0]}' in {where}{hint}"
    return located.position(path), f"{where}: {err.message}"


def _dotted(path: tuple[str | int, ...]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out or "policy"


def load_policy(spec: str, approvals: list[str] | None = None, *, option: str = "--policy") -> Policy:
    """Load `spec` (shipped name or path) with its extends chain, then `--approve` rules. `option` names
    where `spec` came from in an error about the file itself (not a regular file, too large)."""
    try:
        path = resolve_policy_path(spec)
    except FileNotFoundError as exc:
        raise PolicyError(spec, 1, 1, str(exc)) from None
    policy = _load_chain(path, (), option)
    # The sandbox's network allow-list is a set of `network` allow rules after the file's own,
    # so that `policy explain`, the audit log and the egress proxy decide alike.
    try:
        net = network_rules(config_from(policy.sections.get("sandbox", {}), "auto"))
    except SandboxConfigError as exc:
        raise PolicyError(policy.path, 1, 1, str(exc)) from None
    if net:
        policy = policy.with_rules(net)
    if approvals:
        policy = policy.with_rules([parse_approval(a, i) for i, a in enumerate(approvals)])
    return policy


def parse_approval(text: str, index: int, scope: str = "run") -> Rule:
    """`DOMAIN:PATTERN` from --approve: an allow rule placed after all others. `scope`: `call` for what `replay
    --call` approves (the audit record's approval_scope)."""
    domain, sep, pattern = text.partition(":")
    if not sep or not pattern or domain not in {"*", *DOMAINS}:
        raise PolicyError("--approve", 1, 1, "expected DOMAIN:PATTERN (e.g. bash:shell:npm test)",
                          where=f"--approve {shlex.quote(text)}")
    try:
        compiled = compile_rule_pattern(pattern)
    except ValueError as exc:
        raise PolicyError("--approve", 1, len(domain) + 2, str(exc), where=f"--approve {shlex.quote(text)}") from None
    return Rule(domain, compiled, "allow", "--approve", index, scope=scope)


def _load_chain(path: Path, seen: tuple[Path, ...], option: str = "--policy") -> Policy:
    file = str(path)
    if path in seen:
        chain = " -> ".join(str(p) for p in (*seen, path))
        raise PolicyError(file, 1, 1, f"extends cycle: {chain}")
    try:
        text = read_input_text(path, f"extends in {seen[-1]}" if seen else option)
    except InputRefused as exc:  # a FIFO, a device, over 16 MiB: never read (it would hang or fill memory)
        raise PolicyError(file, 1, 1, exc.detail, where=exc.option) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise PolicyError(file, 1, 1, f"cannot read policy: {exc}") from None
    located = parse(text, file)
    if not isinstance(located.value, dict):
        raise PolicyError(file, 1, 1, "a policy must be a JSON object")
    if path.parent != shipped_dir():  # shipped policies are validated by the test suite, not at every start
        validate(located, file)
    data: dict[str, Any] = located.value
    rules = _compile_rules(located, file)

    base: Policy | None = None
    if "extends" in data:
        try:
            base_path = resolve_policy_path(data["extends"], path.parent)
        except FileNotFoundError as exc:
            line, col = located.position(("extends",))
            raise PolicyError(file, line, col, str(exc)) from None
        if not base_path.is_file():
            line, col = located.position(("extends",))
            raise PolicyError(file, line, col, f"extends: no such file {base_path}")
        base = _load_chain(base_path, (*seen, path), option)

    own_sections = {k: v for k, v in data.items() if k not in _NOT_SECTIONS}
    own_sections["permission"] = {k: v for k, v in data.get("permission", {}).items() if k != "rules"}
    sections = _merge(base.sections if base else {}, own_sections)
    if base is not None and "hooks" in base.sections and "hooks" in data:
        sections["hooks"] = merged_hooks(base.sections["hooks"], data["hooks"])
    if (wrong := _pattern_errors(located, file, "risk")):
        raise wrong[0]
    base_risk = base.sections.get("risk") if base else None
    own_risk = data.get("risk")
    if isinstance(base_risk, dict) and isinstance(own_risk, dict) and "rules" in own_risk:
        # As permission rules: the base's first, so this file's win (the last match decides).
        sections["risk"] = {**sections["risk"], "rules": [*base_risk.get("rules", []), *own_risk["rules"]]}
    mode = data.get("mode") or (base.mode if base else "agent")
    all_rules = [*(base.rules if base else []), *rules]
    files = [*(base.files if base else []), file]
    mode_given = "mode" in data or (base.mode_given if base else False)
    return Policy(file, mode, all_rules, files, sections, snapshot(mode, sections, all_rules, files),
                  mode_given=mode_given)


_NOT_SECTIONS = frozenset({"$schema", "extends", "permission", "mode", "description"})


def _compile_rules(located: Located, file: str) -> list[Rule]:
    rules = []
    for i, raw in enumerate(located.value.get("permission", {}).get("rules", [])):
        try:
            pattern = compile_rule_pattern(raw["pattern"])
        except ValueError as exc:
            line, col = located.position(("permission", "rules", i, "pattern"))
            raise PolicyError(file, line, col, str(exc)) from None
        line, _ = located.position(("permission", "rules", i))
        rules.append(Rule(raw["domain"], pattern, raw["decision"], file, i, line))
    return rules


def _merge(base: dict[str, Any], own: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in own.items():
        out[key] = _merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out
