"""agent-run: a headless, CI-oriented LLM agent runner."""

__version__ = "0.1.0"
