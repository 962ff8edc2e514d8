"""The `agent-run` entry point: the arguments are looked at before anything is imported, then the click group
(`group.py`) is loaded and handed them.

`agent-run --version` alone is answered here, before click is imported (click alone costs about four times a bare
`python -c pass`); with anything beside it, click parses the line as before.
"""

from __future__ import annotations

import sys
from typing import Any


def main(argv: list[str] | None = None) -> Any:
    args = sys.argv[1:] if argv is None else argv
    if args == ["--version"]:
        from runner.cli.version import version_line

        sys.stdout.write(version_line() + "\n")
        sys.stdout.flush()
        raise SystemExit(0)  # as click's standalone mode ends after --version
    from runner.cli.group import cli

    return cli.main(args=argv, prog_name="agent-run")
