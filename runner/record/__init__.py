"""The run directory: its layout and event log (`rundir.py`), the integrity chain, secret masking,
locks, atomic writes, audit.jsonl (`audit.py`), and reading a recorded conversation back (`conversation.py`).

May import core only.
"""
