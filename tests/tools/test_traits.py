"""A tool is its class: its risk, context class, concurrency, aliases and when it is offered are class attributes
(runner/tools/base.py), and the lists elsewhere are derived from them (runner/subagents/builtin.py)."""

from __future__ import annotations

import re
from pathlib import Path

from click.testing import CliRunner

from runner.cli.group import cli
from runner.context.prune import ToolKinds
from runner.policy.risk import LEVELS
from runner.run.toolset import builtin_names
from runner.subagents.builtin import ALIASES, BUILTIN
from runner.tools.registry import CORE, core_tools


def test_every_built_in_tool_declares_its_traits():
    for cls in BUILTIN:
        assert cls.risk in LEVELS, cls.name
        assert cls.context_class in (None, "whole", "protected", "by_reference"), cls.name
        assert cls.concurrent in (None, "read", "agent"), cls.name
        assert cls.offered in ("always", "configured", "added"), cls.name
    assert len({cls.name for cls in BUILTIN}) == len(BUILTIN)


def test_the_core_classes_are_the_registrys_in_its_order():
    assert [type(t) for t in core_tools("http://search.invalid/").tools] == list(CORE)
    assert [t.name for t in core_tools().tools] == [c.name for c in CORE if c.offered == "always"]


def test_tools_option_names_the_built_in_tools_in_the_order_they_are_offered():
    assert builtin_names() == ["read", "list", "glob", "grep", "write", "edit", "delete", "move", "bash",
                               "web_fetch", "memory_search", "todo", "web_search", "skill", "task"]


def test_context_kinds_from_the_classes():
    kinds = ToolKinds.of(BUILTIN)
    assert kinds.whole == {"skill", "task"}
    assert kinds.by_reference == {"write", "edit"}
    assert kinds.protected == {"todo", "write", "edit", "delete", "move", "skill", "task"}


def test_claude_codes_names_are_the_classes_aliases():
    claude = {"Bash": "bash", "Edit": "edit", "MultiEdit": "edit", "Write": "write", "Read": "read", "LS": "list",
              "Grep": "grep", "Glob": "glob", "WebFetch": "web_fetch", "WebSearch": "web_search",
              "TodoWrite": "todo", "Task": "task"}
    assert {alias.lower(): name for alias, name in claude.items()} == ALIASES


def test_parallel_calls_help_lists_the_read_only_tools_every_run_may_offer():
    """The flag's help names them (its text is part of the public CLI): the read-only classes, but for what the
    trusted environment must configure first."""
    text = " ".join(CliRunner().invoke(cli, ["run", "--help"], terminal_width=2000).output.split())
    listed = re.search(r"Read-only calls of one model reply \(([^)]*)\)", text)
    assert listed is not None
    names = [n.strip() for n in listed.group(1).split(",") if not n.strip().startswith("MCP")]
    assert sorted(names) == sorted(c.name for c in BUILTIN if c.concurrent == "read" and c.offered != "configured")


ROOT = Path(__file__).resolve().parents[2]


def _named(text: str) -> set[str]:
    """The built-in tool names `text` writes in backticks."""
    return set(re.findall(r"`([a-z_]+)`", text)) & {cls.name for cls in BUILTIN}


def test_the_risk_table_of_the_policy_docs_follows_the_classes():
    """docs/policies.md names each tool in the row of its class's `risk` (the task tool's depends on its child:
    medium and high; the high row names `bash` too, as what makes a child high)."""
    text = (ROOT / "docs" / "policies.md").read_text(encoding="utf-8")
    rows = {level: _named(row) for level, row in re.findall(r"^\| `(low|medium|high)` \| (.*) \|$", text, re.M)}
    assert set(rows) == {"low", "medium", "high"}
    for cls in BUILTIN:
        for level in {"medium", "high"} if cls.name == "task" else {str(cls.risk)}:
            assert cls.name in rows[level], (cls.name, level)
    assert rows["low"] == {c.name for c in BUILTIN if c.risk == "low"}


def test_the_calls_at_once_docs_name_the_read_only_tools_every_run_may_offer():
    text = (ROOT / "docs" / "tools.md").read_text(encoding="utf-8")
    section = text.split("## Calls at once", 1)[1].split("run **concurrently**", 1)[0]
    assert _named(section) == {c.name for c in BUILTIN if c.concurrent == "read" and c.offered != "configured"}
