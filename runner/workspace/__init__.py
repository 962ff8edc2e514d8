"""What the workspace tells the agent and what the runner reads of it: instructions (AGENTS.md and
the system prompt), skills, the output schema, repository files read safely, the trust rule for task
files, the runner's own git (`git.py`), the workspace state a continued run checks (`state.py`) and
private worktrees (`worktree.py`).

May import policy, record and core.
"""
