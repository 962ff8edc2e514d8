"""Subagents: the `task` tool and the child agents it runs (docs/subagents.md); `builtin.py`, every built-in tool
class (this floor's task tool the last of them) and the one table of their aliases.

A child is assembled from the engine's pieces (`runner.engine.build`), never by reaching back into the
run that started it. May import `runner.mcp`, `runner.sandbox`, the engine and everything below.
"""
