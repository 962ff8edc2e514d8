"""Deterministic guards, outside the model, run after every call; a guard ends a run by raising.
`base.py` is their contract with the call hooks (what a guard sees, what it answers).

Beside `runner.context` and `runner.report` (none of the three imports another); may import model and below.
"""
