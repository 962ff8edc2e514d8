"""Permission policy, from JSONC to a decision: load (`jsonc.py`, `load.py`: JSONC + schema, the extends
chain), the domains (`domains.py`, the one table of them), the resolved policy (`model.py`), targets and their
patterns (`targets.py`, `match.py`, `index.py`), shell analysis (`shell.py`, `commands.py`, `sed.py`), decide
calls (`decide.py`), hard limits (`limits.py`), a call's risk (`risk.py`), what a `network` decision means for a
connection (`egress.py`), what the policy asks of the sandbox (`sandbox_config.py`, `gitdirs.py`), suggestions
for humans (`suggest.py`), the `hooks` section (`hooks.py`), a rule a later one shadows (`shadow.py`).

May import record and core only.
"""
