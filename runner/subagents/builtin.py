"""Every built-in tool class: the core tools (runner/tools/registry.py `CORE`), `skill` and `task`. The task tool
is this floor's, so this is the lowest place that sees them all; what a lower floor needs of them (the aliases
skills' `allowed-tools` use) is derived here and handed down.
"""

from __future__ import annotations

from runner.subagents.tool import TaskTool
from runner.tools.base import Tool
from runner.tools.registry import CORE, alias_table
from runner.tools.skill import SkillTool

BUILTIN: tuple[type[Tool], ...] = (*CORE, SkillTool, TaskTool)
# Other agents' tool names (Claude Code's `Bash`, `MultiEdit`, `LS`, …, lower-cased) -> ours: the one table of them,
# from the classes' `aliases`, for skills' `allowed-tools` and profiles' `tools`.
ALIASES = alias_table(BUILTIN)
