"""Subagents: the `task` tool and the child agents it runs (docs/subagents.md)."""
