"""Models the loop can ask: an OpenAI-compatible endpoint, or a recorded run.

May import tools, workspace, policy, record and core (in practice only record and core).
"""
