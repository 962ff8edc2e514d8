"""Subagents: the `task` tool and the child agents it runs (docs/subagents.md).

A child is assembled from the engine's pieces (`runner.engine.build`), never by reaching back into the
run that started it. May import `runner.mcp`, `runner.sandbox`, the engine and everything below.
"""
