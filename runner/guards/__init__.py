"""Deterministic guards, outside the model, run after every call; a guard ends a run by raising."""
