"""Context economy: keep the prompt under the window and its prefix stable. The context manager and its
stages (`manager.py`: trim, clear, summarize), what pruning keeps whole or clears (`prune.py`), and the usable
window as a hard limit (`window.py`).

Beside `runner.guards` and `runner.report`; may import model and below.
"""
