"""The `agent-run` entry point: the arguments are looked at before anything is imported, then the click group
(`group.py`) is loaded and handed them."""

from __future__ import annotations

from typing import Any


def main(argv: list[str] | None = None) -> Any:
    from runner.cli.group import cli

    return cli.main(args=argv, prog_name="agent-run")
