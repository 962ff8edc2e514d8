"""One run assembled and driven: the task file, the policy and settings chosen for it, the model, the
call hooks, subagents, MCP servers and the sandbox wired together (`assemble.prepare`), the loop, the
task's check, and the finishing that every run shares (`assemble.finish`).

May import every package below it (subagents, mcp, sandbox, engine and down); imported only by
`runner.sessions`, `runner.github` and `runner.cli`.
"""
