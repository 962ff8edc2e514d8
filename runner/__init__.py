"""agent-run: a headless, CI-oriented LLM agent runner."""

from __future__ import annotations


def __getattr__(name: str) -> str:
    # The version is written once, in pyproject.toml; read from the installed metadata only when asked
    # (nothing happens on import).
    if name == "__version__":
        from importlib.metadata import version

        return version("agent-run")
    raise AttributeError(f"module 'runner' has no attribute {name!r}")
