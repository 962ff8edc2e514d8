"""Entry points: the click commands (`agent-run run|resume|fork|replay|batch|batch-merge|runs|policy|sandbox|
cleanup` and `github respond`), their run options built from the option table (`flags.py`), their output on
stdout/stderr and to the CI (`output.py`), and the generated help and tool docs (`docgen.py`, `helpdoc.py`).

Top floor: may import every package below; nothing imports it. Each command stays thin over the library.
"""
