"""`agent-run`: a click group whose default command is `run`, so
`agent-run task.md` and `agent-run run task.md` are the same."""

from __future__ import annotations

from typing import Any

import click

from runner import __version__
from runner.cli.batch import batch
from runner.cli.cleanup import cleanup
from runner.cli.policy import policy
from runner.cli.replay import replay_cmd
from runner.cli.run import run
from runner.cli.runs import runs
from runner.cli.sandbox import sandbox


class DefaultGroup(click.Group):
    """Routes anything that is not a subcommand (a task path, `-`, an option) to `run`."""

    default_command = "run"

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h", "--version"):
            args = [self.default_command, *args]
        return super().parse_args(ctx, args)


@click.group(cls=DefaultGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="agent-run")
def cli() -> None:
    """Run an LLM agent headless, under a policy, with an auditable run directory.

    \b
    agent-run [OPTIONS] TASK        same as: agent-run run [OPTIONS] TASK
    """


cli.add_command(run)
cli.add_command(policy)
cli.add_command(replay_cmd)
cli.add_command(cleanup)
cli.add_command(batch)
cli.add_command(runs)
cli.add_command(sandbox)


def main(argv: list[str] | None = None) -> Any:
    return cli.main(args=argv, prog_name="agent-run")
