"""The tool set in a stable order: the `tools` list is part of the prompt prefix."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from runner.tools.base import Tool
from runner.tools.bash import Bash
from runner.tools.delete import Delete
from runner.tools.edit import Edit
from runner.tools.glob import Glob
from runner.tools.grep import Grep
from runner.tools.list import List
from runner.tools.memory_search import MemorySearch
from runner.tools.move import Move
from runner.tools.read import Read
from runner.tools.todo import Todo
from runner.tools.web_fetch import WebFetch
from runner.tools.web_search import WebSearch
from runner.tools.write import Write


class Registry:
    def __init__(self, tools: Sequence[Tool]) -> None:
        self._tools = {t.name: t for t in tools}

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    @property
    def tools(self) -> list[Tool]:
        return list(self._tools.values())

    @property
    def names(self) -> list[str]:
        return list(self._tools)

    def with_tools(self, extra: Sequence[Tool]) -> Registry:
        """These tools, then `extra` (MCP tools, in their own stable order)."""
        return Registry([*self._tools.values(), *extra])

    def specs(self) -> list[dict[str, Any]]:
        return [t.spec() for t in self._tools.values()]


# The core tools' classes, in the registry's order (the tools array's: part of the prompt prefix).
CORE: tuple[type[Tool], ...] = (Read, List, Glob, Grep, Write, Edit, Delete, Move, Bash, WebFetch, WebSearch,
                                MemorySearch, Todo)

def core_tools(search_url: str | None = None) -> Registry:
    """`search_url`: AGENT_RUN_SEARCH_URL from the trusted environment; web_search is offered only with it."""
    search = [WebSearch(search_url)] if search_url else []
    return Registry([Read(), List(), Glob(), Grep(), Write(), Edit(), Delete(), Move(), Bash(), WebFetch(), *search,
                     MemorySearch(), Todo()])


def alias_table(classes: Iterable[type[Tool]]) -> dict[str, str]:
    """Another agent's name for a tool, lower-cased (a skill may write `Bash` or `bash`) -> the tool's name."""
    return {alias.lower(): cls.name for cls in classes for alias in cls.aliases}
