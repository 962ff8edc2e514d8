"""docs/architecture.md's "Where to add" recipes name every place, and only places that exist: each file a recipe
names is there (with the name it points at in it), a tool class is where the tool recipe says it is registered,
and the domains are listed in exactly the files the domain recipe names."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "runner"
# `runner/tools/registry.py CORE`, `tools/registry.py`, docs/tools.md: a path (from the repository's root or from
# runner/), and perhaps the name it points at.
PATH = re.compile(r"((?:[\w.<>-]+/)+[\w.<>-]*|[\w-]+\.(?:py|md))(?: (\w+)(?=`))?")


def recipes() -> dict[str, str]:
    """Each recipe of docs/architecture.md's "Where to add": its subject (`A tool`) -> its text."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("## Where to add", 1)[1].split("\n## ", 1)[0]
    items = re.findall(r"^- \*\*(.+?)\*\*:(.*?)(?=^- \*\*|\Z)", section, re.S | re.M)
    return {subject: " ".join(body.split()) for subject, body in items}


def named_paths(recipe: str) -> list[tuple[str, str | None]]:
    """(path, the name it points at or None) for each file or folder a recipe names, in backticks or not (a bare
    `summary.json` is a file of the run directory, not of the repository)."""
    found = []
    for path, name in PATH.findall(recipe):
        if "/" in path or path.endswith((".py", ".md")):
            found.append((path.rstrip("."), name or None))
    return found


def resolve(path: str) -> Path | None:
    """A recipe's path from the repository's root or from runner/ (a `<name>` in it: its folder)."""
    path = path.split("<", 1)[0].rsplit("/", 1)[0] + "/" if "<" in path else path
    for base in (ROOT, PACKAGE):
        if (base / path).exists():
            return base / path
    return None


def top_level_names(path: Path) -> set[str]:
    names = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                names |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
    return names


def test_the_recipes_are_there():
    assert {"A tool", "A policy domain", "A report format", "A model server quirk", "A run option"} <= set(recipes())


def test_every_place_a_recipe_names_exists():
    missing = []
    for subject, recipe in recipes().items():
        for path, name in named_paths(recipe):
            where = resolve(path)
            if where is None:
                missing.append((subject, path))
            elif name and where.suffix == ".py" and name not in top_level_names(where):
                missing.append((subject, f"{path} {name}"))
    assert missing == []


def test_the_path_finder_sees_each_form():
    recipe = "in `runner/tools/<name>.py` (x), `tools/registry.py CORE` and docs/tools.md; `runner/report/`."
    assert named_paths(recipe) == [("runner/tools/<name>.py", None), ("tools/registry.py", "CORE"),
                                   ("docs/tools.md", None), ("runner/report/", None)]
    assert resolve("tools/registry.py") == PACKAGE / "tools" / "registry.py"
    assert resolve("runner/tools/<name>.py") == PACKAGE / "tools" / "" and resolve("tools/nothing.py") is None


def test_every_tool_class_is_registered_where_the_tool_recipe_says():
    """A `Tool` subclass of runner/ is one of the built-in classes (runner/tools/registry.py CORE, the skill tool,
    the task tool: runner/subagents/builtin.py BUILTIN), or the MCP tool (one per server tool, not built in)."""
    from runner.subagents.builtin import BUILTIN

    classes = {node.name for path in PACKAGE.rglob("*.py") for node in ast.walk(ast.parse(path.read_text("utf-8")))
               if isinstance(node, ast.ClassDef) and any(ast.unparse(b) == "Tool" for b in node.bases)}
    assert classes == {cls.__name__ for cls in BUILTIN} | {"McpTool"}
    recipe = recipes()["A tool"]
    assert ("runner/tools/registry.py", "CORE") in named_paths(recipe)
    assert ("runner/subagents/builtin.py", "BUILTIN") in named_paths(recipe)


def test_the_tool_recipe_names_every_trait_of_a_tool():
    from runner.tools.base import Tool

    traits = {"risk", "context_class", "concurrent", "aliases", "offered", "narrows", "restore"}
    assert traits <= set(vars(Tool))
    assert {t for t in traits if f"`{t}`" not in recipes()["A tool"]} == set()


def _lists_domains(values: list[object], domains: set[str]) -> bool:
    return len({v for v in values if isinstance(v, str)} & domains) >= 3


def domain_lists() -> set[str]:
    """The files (relative to the repository's root) that type out the policy's domains: a module-level value of
    runner/ or a JSON array of runner/ or policies/ holding three or more of their names."""
    from runner.policy.domains import DOMAINS

    domains = set(DOMAINS)
    found = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            value = node.value if isinstance(node, ast.Assign | ast.AnnAssign) else None
            strings = [n.value for n in ast.walk(value) if isinstance(n, ast.Constant)] if value else []
            if _lists_domains(strings, domains):
                found.add(path.relative_to(ROOT).as_posix())
    for path in [*PACKAGE.rglob("*.json"), *(ROOT / "policies").glob("*.json")]:
        stack = [json.loads(path.read_text(encoding="utf-8"))]
        while stack:
            node = stack.pop()
            if isinstance(node, list) and _lists_domains(node, domains):
                found.add(path.relative_to(ROOT).as_posix())
            stack.extend(node.values() if isinstance(node, dict) else node if isinstance(node, list) else [])
    return found


def test_the_domains_are_listed_in_exactly_the_files_the_domain_recipe_names():
    """One table, the schemas generated from it (runner/cli/docgen.py SCHEMA_ENUMS) and their copies in other
    schemas (SCHEMA_COPIES)."""
    from runner.cli.docgen import SCHEMA_COPIES, SCHEMA_ENUMS

    named = {path for path, _ in named_paths(recipes()["A policy domain"])}
    copies = {path for path, (_, source) in SCHEMA_COPIES.items() if source in SCHEMA_ENUMS}
    assert domain_lists() == {"runner/policy/domains.py", *SCHEMA_ENUMS, *copies}
    assert domain_lists() <= named
