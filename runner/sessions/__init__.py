"""Continuing recorded runs: `resume`, `fork` and `replay` (with and without `--continue`).

Owns reading a recorded run back once (`load.py`: verified, its events, task, policy snapshot and summary)
and turning it into the inputs of a new run; the new run itself is assembled by `runner.run` like any
other. May import `runner.run` and everything below it; only `runner.cli` imports it.
"""
