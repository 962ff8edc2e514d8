"""`agent-run`: a click group whose default command is `run`, so
`agent-run task.md` and `agent-run run task.md` are the same.

Subcommands are imported when they are invoked, not before: `--version`, `--help` and
`policy explain` must not pay for the openai SDK (about half a second) or for modules
they never use.
"""

from __future__ import annotations

import importlib
from typing import Any

import click

from runner import __version__

# name -> (module, attribute): the seam where imports become lazy.
COMMANDS = {
    "run": ("runner.cli.run", "run"),
    "policy": ("runner.cli.policy", "policy"),
    "replay": ("runner.cli.replay", "replay_cmd"),
    "cleanup": ("runner.cli.cleanup", "cleanup"),
    "batch": ("runner.cli.batch", "batch"),
    "runs": ("runner.cli.runs", "runs"),
    "sandbox": ("runner.cli.sandbox", "sandbox"),
}


class DefaultGroup(click.Group):
    """Routes anything that is not a subcommand (a task path, `-`, an option) to `run`, and loads
    each subcommand's module only when it is needed."""

    default_command = "run"

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        module, attr = COMMANDS[cmd_name]
        command: click.Command = getattr(importlib.import_module(module), attr)
        return command

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in COMMANDS and args[0] not in ("--help", "-h", "--version"):
            args = [self.default_command, *args]
        return super().parse_args(ctx, args)


@click.group(cls=DefaultGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="agent-run")
def cli() -> None:
    """Run an LLM agent headless, under a policy, with an auditable run directory.

    \b
    agent-run [OPTIONS] TASK        same as: agent-run run [OPTIONS] TASK
    """


def main(argv: list[str] | None = None) -> Any:
    return cli.main(args=argv, prog_name="agent-run")
