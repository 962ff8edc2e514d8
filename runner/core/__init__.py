"""The vocabulary every layer speaks: typed events (`events.py`), outcomes and their exit codes
(`outcome.py`), canonical JSON and hashes (`jsonutil.py`).

The bottom floor: imports no other package of the runner.
"""
