"""Doc tables generated from their one source; a test fails when a checked-in copy drifts.

    python -m runner.cli.docgen          # rewrite every generated region in place
    python -m runner.cli.docgen --check  # exit 1, naming the files, when one is out of date

A generated region sits between `<!-- generated: NAME -->` and `<!-- end generated -->`;
everything outside the markers is hand-written and left alone.

- `events` (docs/run-directory.md): the event table, from runner/schemas/events.schema.json.
- `tools` (docs/tools.md): the tool table, from runner/tools/registry.py `core_tools()`.
- `action-inputs` (docs/ci.md): the GitHub Action's inputs, from action.yml and the run options' table.

JSON Schemas are generated in part the same way: the policy domains' enums of policies/policy.schema.json,
runner/schemas/events.schema.json and summary.schema.json, from runner/policy/domains.py (`SCHEMA_ENUMS`); and
whole JSON values copied into a schema (`SCHEMA_COPIES`): runner/schemas/result.schema.json's `$defs.summary`
is runner/schemas/summary.schema.json, so the result schema validates alone (its `$ref: summary.schema.json`
finds the copy by its `$id`, with nothing to fetch).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
COMMAND = "python -m runner.cli.docgen"
ACTION = ROOT / "action.yml"  # a source, read where it is (ROOT may be pointed elsewhere for the regions)
END = "<!-- end generated -->"
# Every event has these; the hand-written text above the table says what they are.
COMMON_FIELDS = ("seq", "ts", "run_id", "type", "prev")


def _cell(text: str) -> str:
    """One line of a Markdown table cell."""
    return " ".join(text.split()).replace("|", "\\|")


def _sentence(text: str) -> str:
    """A schema description as a clause: no final period, a leading capital lowered (not an acronym's)."""
    text = text.strip().rstrip(".")
    first = text.split(" ", 1)[0]
    if first == "A" or (len(first) > 1 and first[0].isupper() and first[1].islower()):
        text = text[0].lower() + text[1:]
    return text


def _value(value: Any) -> str:
    return f"`{json.dumps(value) if value is None or isinstance(value, bool) else value}`"


def _resolve(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return schema["$defs"][ref.removeprefix("#/$defs/")]
    return node


def _field(schema: dict[str, Any], name: str, prop: dict[str, Any]) -> str:
    """`name` (its description; its values `a`/`b`; or its keys `x`, `y`)."""
    target = _resolve(schema, prop)
    notes = []
    if prop.get("description"):
        notes.append(_sentence(str(prop["description"])))
    values = prop.get("enum") or target.get("enum")
    if values:
        notes.append("/".join(_value(v) for v in values))
    elif target is not prop and isinstance(target.get("properties"), dict):
        notes.append(", ".join(f"`{k}`" for k in target["properties"]))
    return f"`{name}`" + (f" ({'; '.join(notes)})" if notes else "")


def event_types(schema: dict[str, Any]) -> list[str]:
    return list(schema["properties"]["type"]["enum"])


def events_table(schema: dict[str, Any] | None = None) -> str:
    """The `| type | fields |` table: each event type's own fields, in the schema's order."""
    if schema is None:  # with the domains as the table has them, so one regeneration brings both up to date
        text = (resources.files("runner") / "schemas" / "events.schema.json").read_text("utf-8")
        schema = json.loads(events_schema_enums(text))
    lines = ["| type | fields |", "|---|---|"]
    for name in event_types(schema):
        definition = schema["$defs"][name]
        fields = ", ".join(_field(schema, key, prop) for key, prop in definition["properties"].items()
                           if key not in COMMON_FIELDS)
        about = definition.get("description")
        lines.append(f"| `{name}` | {_cell(fields)}{' — ' + _cell(_sentence(about)) if about else ''} |")
    return "\n".join(lines)


def tools_table() -> str:
    """The tools the model gets, in the order it gets them (the order is part of the prompt prefix)."""
    from runner.tools.registry import core_tools

    registry = core_tools()
    lines = ["| tool | domain | description |", "|---|---|---|"]
    for name in registry.names:
        tool = registry.get(name)
        assert tool is not None
        lines.append(f"| `{tool.name}` | `{tool.domain}` | {_cell(tool.description)} |")
    return "\n".join(lines)


def action_inputs_table() -> str:
    """The GitHub Action's inputs (action.yml), in its order, with their defaults and descriptions; an input
    that sets a run option names its flag, and the flags the `args` input refuses are the option table's
    (runner/run/option_table.py `action`; tests/run/test_option_table.py holds action.yml to them). A
    `docs/X.md` a description mentions becomes a link."""
    import yaml

    from runner.run.option_table import ACTION_OWN, OPTIONS, action_owned

    inputs = yaml.safe_load(ACTION.read_text(encoding="utf-8"))["inputs"]
    flags = {o.action: o.flag for o in OPTIONS if o.action not in (None, ACTION_OWN)}
    owned = [" ".join(flags) for flags in action_owned()]
    lines = ["| input | default | meaning |", "|---|---|---|"]
    for name, spec in inputs.items():
        default = "(required)" if spec.get("required") else f"`{spec['default']}`" if spec.get("default") else ""
        meaning = re.sub(r"docs/([a-z-]+\.md)", r"[\1](\1)", _cell(spec["description"]))
        if name in flags:
            meaning = f"`{flags[name]}`: " + _sentence(meaning) + "."
        for words in owned:
            meaning = meaning.replace(words, f"`{words}`")
        lines.append(f"| `{name}` | {default + ' ' if default else ''}| {meaning} |")
    return "\n".join(lines)


# region name -> (the file holding it, relative to the repo root; what generates it)
REGIONS: dict[str, tuple[str, Callable[[], str]]] = {
    "events": ("docs/run-directory.md", events_table),
    "tools": ("docs/tools.md", tools_table),
    "action-inputs": ("docs/ci.md", action_inputs_table),
}


def _domains() -> list[str]:
    from runner.policy.domains import DOMAINS

    return list(DOMAINS)


def events_schema_enums(text: str) -> str:
    """runner/schemas/events.schema.json (`json.dumps`, indent 2) with `$defs.domain.enum` the domains."""
    schema = json.loads(text)
    schema["$defs"]["domain"]["enum"] = _domains()
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


_RULE_DOMAIN = re.compile(r'("domain": \{ "enum": )\[[^\]]*\]( \})')


def policy_schema_enums(text: str) -> str:
    """policies/policy.schema.json (written by hand: only the enum lines are replaced) with every rule's `domain`
    enum `*` and the domains."""
    if len(_RULE_DOMAIN.findall(text)) != 2:  # permission rules, risk rules
        raise ValueError('expected two \'"domain": { "enum": [...] }\' lines in policies/policy.schema.json')
    return _RULE_DOMAIN.sub(lambda m: m.group(1) + json.dumps(["*", *_domains()]) + m.group(2), text)


# a schema (relative to the repo root) -> what rewrites its generated enums
SCHEMA_ENUMS: dict[str, Callable[[str], str]] = {
    "runner/schemas/events.schema.json": events_schema_enums,
    "runner/schemas/summary.schema.json": events_schema_enums,  # the same `$defs.domain`
    "policies/policy.schema.json": policy_schema_enums,
}


# schema file -> ($defs key, the schema file copied there); paths relative to the repo root.
SCHEMA_COPIES: dict[str, tuple[str, str]] = {
    "runner/schemas/result.schema.json": ("summary", "runner/schemas/summary.schema.json"),
}


def schema_text(schema: dict[str, Any]) -> str:
    """A schema file's text, as every file in runner/schemas/ is written."""
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def with_copy(text: str, key: str, source: str) -> str:
    """Schema `text` with `$defs[key]` replaced by the schema `source` (both JSON text)."""
    schema = json.loads(text)
    schema.setdefault("$defs", {})[key] = json.loads(source)
    return schema_text(schema)


def _pattern(name: str) -> re.Pattern[str]:
    return re.compile(rf"(<!-- generated: {re.escape(name)} -->\n)(.*?)(^{re.escape(END)})", re.S | re.M)


def render(text: str, name: str, body: str) -> str:
    """`text` with region `name`'s contents replaced by `body`; ValueError when the markers are missing."""
    pattern = _pattern(name)
    matches = pattern.findall(text)
    if len(matches) != 1:
        raise ValueError(f"expected one '<!-- generated: {name} -->' … '{END}' region, found {len(matches)}")
    return pattern.sub(lambda m: m.group(1) + body.rstrip("\n") + "\n" + m.group(3), text)


def regenerate(root: Path | None = None) -> dict[Path, tuple[str, str]]:
    """Every file holding a generated region: (its text now, its text regenerated)."""
    root = ROOT if root is None else root
    out: dict[Path, tuple[str, str]] = {}
    for name, (rel, generate) in REGIONS.items():
        path = root / rel
        current = out[path][1] if path in out else path.read_text(encoding="utf-8")
        original = out[path][0] if path in out else current
        out[path] = (original, render(current, name, generate()))
    for rel, rewrite in SCHEMA_ENUMS.items():
        text = (root / rel).read_text(encoding="utf-8")
        out[root / rel] = (text, rewrite(text))
    for rel, (key, source) in SCHEMA_COPIES.items():  # after the enums: the copy is of the source regenerated
        text = (root / rel).read_text(encoding="utf-8")
        copied = out[root / source][1] if root / source in out else (root / source).read_text(encoding="utf-8")
        out[root / rel] = (text, with_copy(text, key, copied))
    return out


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    check = "--check" in args
    stale = []
    for path, (old, new) in regenerate(ROOT).items():
        if old != new:
            stale.append(path)
            if not check:
                path.write_text(new, encoding="utf-8")
    for path in stale:
        print(f"{'out of date' if check else 'rewrote'}: {path.relative_to(ROOT)}", file=sys.stderr)
    if check and stale:
        print(f"regenerate: {COMMAND}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
