"""The vocabulary every layer speaks: typed events (`events.py`), outcomes and their exit codes
(`outcome.py`), canonical JSON and hashes (`jsonutil.py`), the workflow's input files read safely
(`inputfile.py`), file-system text as every record shows it (`shown.py`), and the nonce frames around
untrusted text sent to the model (`frames.py`).

The bottom floor: imports no other package of the runner.
"""
