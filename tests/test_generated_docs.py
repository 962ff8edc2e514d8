"""Doc tables generated from their one source (runner/cli/docgen.py) cannot drift from it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from runner.cli import docgen

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = json.loads((ROOT / "runner" / "schemas" / "events.schema.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("path", sorted({rel for rel, _ in docgen.REGIONS.values()}))
def test_generated_regions_are_current(path):
    old, new = docgen.regenerate(ROOT)[ROOT / path]
    assert old == new, f"{path}: a generated table drifted from its source; regenerate: {docgen.COMMAND}"


@pytest.mark.parametrize("path", sorted(docgen.SCHEMA_COPIES))
def test_schema_copies_are_current(path):
    old, new = docgen.regenerate(ROOT)[ROOT / path]
    assert old == new, f"{path}: a copied schema drifted from its source; regenerate: {docgen.COMMAND}"


def test_a_schema_copy_replaces_only_its_key():
    text = docgen.schema_text({"$id": "r", "allOf": [{"$ref": "s"}], "$defs": {"s": {"old": 1}, "t": {}}})
    assert json.loads(docgen.with_copy(text, "s", '{"$id": "s", "type": "object"}')) == \
        {"$id": "r", "allOf": [{"$ref": "s"}], "$defs": {"s": {"$id": "s", "type": "object"}, "t": {}}}


def test_every_event_type_has_a_row_with_all_its_own_fields():
    table = docgen.events_table(SCHEMA)
    rows = {line.split(" | ")[0].strip("| `"): line for line in table.splitlines()[2:]}
    assert list(rows) == docgen.event_types(SCHEMA)
    for name, row in rows.items():
        for field in SCHEMA["$defs"][name]["properties"]:
            if field not in docgen.COMMON_FIELDS:
                assert f"`{field}`" in row, (name, field)
    assert "`prefix_hash`" in rows["model_request"] and "compaction" in rows


def test_every_tool_the_model_gets_is_in_the_table_in_order():
    from runner.tools.registry import core_tools

    names = re.findall(r"^\| `([a-z_]+)` \|", docgen.tools_table(), re.M)
    assert names == core_tools().names and "memory_search" in names


def test_render_replaces_only_the_region_and_refuses_missing_markers():
    text = "before\n<!-- generated: x -->\nold\nrows\n<!-- end generated -->\nafter\n"
    assert docgen.render(text, "x", "new\n") == "before\n<!-- generated: x -->\nnew\n<!-- end generated -->\nafter\n"
    with pytest.raises(ValueError, match="generated: y"):
        docgen.render(text, "y", "new")


def test_cells_escape_pipes_and_newlines():
    schema = {"properties": {"type": {"enum": ["e"]}},
              "$defs": {"e": {"description": "A | B.\nC.", "properties": {"f": {"description": "X|Y"}}}}}
    assert docgen.events_table(schema).splitlines()[2] == "| `e` | `f` (X\\|Y) — a \\| B. C |"


def test_check_mode_names_the_command(tmp_path, monkeypatch, capsys):
    copies = set(docgen.SCHEMA_COPIES) | {source for _, source in docgen.SCHEMA_COPIES.values()}
    for rel in {rel for rel, _ in docgen.REGIONS.values()} | set(docgen.SCHEMA_ENUMS) | copies:
        target = tmp_path / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text((ROOT / rel).read_text(encoding="utf-8"), encoding="utf-8")
    stale = tmp_path / "docs" / "tools.md"
    stale.write_text(stale.read_text(encoding="utf-8").replace("| `bash` |", "| `sh` |"), encoding="utf-8")
    monkeypatch.setattr(docgen, "ROOT", tmp_path)
    assert docgen.main(["--check"]) == 1
    assert docgen.COMMAND in capsys.readouterr().err
    assert docgen.main([]) == 0 and docgen.main(["--check"]) == 0
    assert "| `bash` |" in stale.read_text(encoding="utf-8")


@pytest.mark.parametrize("path", sorted(docgen.SCHEMA_ENUMS))
def test_the_schemas_domain_enums_are_generated_from_the_domain_table(path):
    old, new = docgen.regenerate(ROOT)[ROOT / path]
    assert old == new, f"{path}: its domain enums drifted from runner/policy/domains.py; regenerate: {docgen.COMMAND}"


def test_a_new_domain_reaches_both_schemas(monkeypatch):
    from runner.policy import domains

    monkeypatch.setattr(domains, "DOMAINS", (*domains.DOMAINS, "spaceship"))
    events = json.loads(docgen.events_schema_enums((ROOT / "runner/schemas/events.schema.json").read_text()))
    assert events["$defs"]["domain"]["enum"][-1] == "spaceship"
    policy = json.loads(docgen.policy_schema_enums((ROOT / "policies/policy.schema.json").read_text()))
    rule = policy["properties"]["permission"]["properties"]["rules"]["items"]["properties"]["domain"]
    assert rule["enum"] == ["*", *domains.DOMAINS]
    risk = policy["properties"]["risk"]["properties"]["rules"]["items"]["properties"]["domain"]
    assert risk["enum"] == ["*", *domains.DOMAINS]
    decision = next(line for line in docgen.events_table().splitlines() if line.startswith("| `permission_decision`"))
    assert "`network`/`spaceship`" in decision  # docs/run-directory.md's table in the same regeneration


def test_run_help_names_every_shipped_policy():
    from runner.policy.load import shipped_names
    from runner.run.option_table import SHIPPED_POLICIES

    assert list(SHIPPED_POLICIES) == shipped_names()
    cli_md = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    section = cli_md.split("## `agent-run run`", 1)[1].split("\n## ", 1)[0]
    assert all(name in " ".join(section.split()) for name in shipped_names())


def test_the_documented_entry_points_run_as_the_docs_say():
    """`python -m runner.cli.docgen --check` and `python -m runner.cli.helpdoc` (docs/tools.md, docs/cli.md)
    run from a checkout: a move that breaks their paths fails here, not for the next person who regenerates."""
    import subprocess
    import sys

    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)}
    check = subprocess.run([sys.executable, "-m", "runner.cli.docgen", "--check"], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=300)
    assert check.returncode == 0, check.stderr
    pages = subprocess.run([sys.executable, "-m", "runner.cli.helpdoc"], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=300)
    assert pages.returncode == 0 and pages.stdout == (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
