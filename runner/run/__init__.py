"""One run assembled and driven: the task file, the policy and settings chosen for it, the model, the
call pipeline, subagents, MCP servers and the sandbox wired together (`assemble.prepare`), the loop, the
task's check, and the finishing that every run shares (`assemble.finish`). What a run is given:
every run option declared once (`option_table.py`), `RunOptions` and what follows from them (`options.py`:
the rerun words, the protected input files); a review-only run's narrowing (`review_only.py`); the lifecycle
hooks' programs run as their own principal (`hooks.py`).

May import every package below it (subagents, mcp, sandbox, engine and down); imported only by
`runner.sessions`, `runner.github` and `runner.cli`.
"""
