"""MCP (Model Context Protocol) servers as tools: configuration, a synchronous client over the official SDK,
the mapping from a server's tools and results to what a model sees, the MCP tool itself, and the wiring
of a run's servers (`setup.py`, `runtime.py`: started in the run's sandbox, decided by its policy).

May import `runner.sandbox`, the engine and everything below; knows nothing of sessions or the CLI.
"""
