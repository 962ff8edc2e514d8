"""docs/cli.md is every `--help` page, generated: a test fails when the docs drift from the CLI.

    python -m runner.cli.helpdoc > docs/cli.md
"""

from __future__ import annotations

import click

from runner.cli.group import cli


def pages() -> str:
    out = ["# Command-line reference", "",
           "Generated from the `--help` pages (`python -m runner.cli.helpdoc > docs/cli.md`); "
           "`tests/test_cli_docs.py` fails when this file and the CLI disagree.", ""]

    def walk(command: click.Command, path: list[str]) -> None:
        # A fixed width: the same text whatever terminal generates or checks it.
        # The real CLI's help names (group.py's context_settings, inherited by every subcommand): click
        # caches a command's help option, so they must match whatever ran first in this process.
        ctx = click.Context(command, info_name=" ".join(path), terminal_width=100, max_content_width=100,
                            help_option_names=["-h", "--help"])
        out.extend([f"## `{' '.join(path)}`", "", "```", command.get_help(ctx).rstrip(), "```", ""])
        if isinstance(command, click.Group):
            for name in command.list_commands(ctx):  # a lazy group loads each one here
                sub = command.get_command(ctx, name)
                if sub is not None:
                    walk(sub, [*path, name])

    walk(cli, ["agent-run"])
    return "\n".join(out)


if __name__ == "__main__":
    print(pages(), end="")
