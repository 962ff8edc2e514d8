"""Entry points: the click commands (`agent-run run|resume|fork|replay|batch|runs|policy|sandbox|cleanup`),
their output on stdout/stderr and to the CI, and the generated help and tool docs (docgen, helpdoc).

Top floor: may import every package below; nothing imports it. Each command stays thin over the library.
"""
