"""Context economy: keep the prompt under the window and its prefix stable (003 P1, P2, P4, P8, P9).

Beside `runner.guards` and `runner.report`; may import model and below.
"""
