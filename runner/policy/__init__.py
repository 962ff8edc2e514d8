"""Permission policy: load (JSONC + schema), match patterns, shell analysis, decide calls, hard limits,
the sandbox network allow-list as rules (`network.py`), suggestions for humans.

May import record and core only.
"""
