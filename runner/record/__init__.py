"""The run directory: its layout and event log (`rundir.py`), the integrity chain, secret masking,
locks, atomic writes, and reading a recorded conversation back (`conversation.py`).

May import core only.
"""
