"""Models the loop can ask: an OpenAI-compatible endpoint, or a recorded run.

May import record and core only: a model client knows the conversation, not the tools, the workspace or the
policy (the forbidden contract in pyproject.toml's `[tool.importlinter]`, beside the floors).
"""
