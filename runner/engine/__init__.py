"""The engine of a run: the stateless loop (`loop.py`), the calls of one reply, some at once (`batch.py`),
one tool call through the call pipeline (`call.py`), the recording that wraps every run and seals its directory
(`recorder.py`), the settings layers (`settings.py`), the pieces both a run and a subagent are built from
(`build.py`), the workflow's lifecycle hooks as one service of the run (`workflow_hooks.py`), and `explain.py`
(why a call is decided as it is).

May import guards, context, report, telemetry, model, tools, workspace, policy, record and core; everything
that assembles a run (sandbox, mcp, subagents, run, sessions, cli) sits above it.
"""
