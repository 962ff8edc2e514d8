"""`agent-run`: a click group whose default command is `run`, so
`agent-run task.md` and `agent-run run task.md` are the same.

Subcommands are imported when they are invoked, not before: `--version`, `--help` and
`policy explain` must not pay for the openai SDK (about half a second) or for modules
they never use.
"""

from __future__ import annotations

import importlib
import re

import click

from runner.cli.version import version_line

# name -> (module, attribute, the first paragraph of its help): the seam where imports become lazy.
# tests/test_cli_docs.py checks each text against the command's own help.
COMMANDS = {
    "batch": ("runner.cli.batch", "batch", "Run TASK... (each in its own run directory), print a table, exit with the "
              "worst code."),
    "batch-merge": ("runner.cli.batch_merge", "batch_merge", "Merge a batch's shards (each DIR one shard's output) "
                    "into one batch.json, JUnit file and step summary."),
    "cleanup": ("runner.cli.cleanup", "cleanup", "Remove run directories (and spill files) older than AGE."),
    "config": ("runner.cli.config", "config", "The settings a run would see (docs/configuration.md)."),
    "fork": ("runner.cli.resume", "fork", "Start a new run from RUN_DIR's conversation as it was at a turn, leaving "
             "RUN_DIR untouched: to try a different instruction (MESSAGE) from the same point."),
    "github": ("runner.cli.github", "github", "Answer GitHub events in their conversation (docs/github.md)."),
    "policy": ("runner.cli.policy", "policy", "Validate policies and predict their decisions."),
    "replay": ("runner.cli.replay", "replay_cmd", "Execute the denied calls of RUN_DIR exactly as the model asked, "
               "under that run's policy with just those calls approved; record them in a new run directory."),
    "resume": ("runner.cli.resume", "resume", "Continue RUN_DIR's conversation in a new run, with fresh budgets: "
               "after a budget, a timeout, a loop guard, a model outage, a denial, a kill, or a finished run (a "
               "follow-up MESSAGE; - reads it from stdin)."),
    "run": ("runner.cli.run", "run", "Run TASK (a Markdown file, or - for stdin) headless."),
    "runs": ("runner.cli.runs", "runs", "List past runs and show what one of them did."),
    "sandbox": ("runner.cli.sandbox", "sandbox",
                "The OS sandbox every command of a run is started in (docs/sandbox.md)."),
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
        module, attr, _ = COMMANDS[cmd_name]
        command: click.Command = getattr(importlib.import_module(module), attr)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # The listing from the table, so that `agent-run --help` imports no subcommand.
        limit = formatter.width - 6 - max(len(name) for name in COMMANDS)  # as click.Group does
        with formatter.section("Commands"):
            formatter.write_dl([(name, _short(COMMANDS[name][2], limit)) for name in sorted(COMMANDS)])

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in COMMANDS and args[0] not in ("--help", "-h", "--version"):
            args = [self.default_command, *args]
        return super().parse_args(ctx, args)


def _short(text: str, limit: int) -> str:
    """The first sentence, cut at a word to `limit` characters."""
    first = re.split(r"(?<!\.)\. ", text)[0].rstrip(".") + "."  # `TASK...` is not a sentence's end
    if len(first) <= limit:
        return first
    return first[: limit - 3].rsplit(" ", 1)[0] + "..."


def _print_version(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    click.echo(version_line(), color=ctx.color)
    ctx.exit()


@click.group(cls=DefaultGroup, context_settings={"help_option_names": ["-h", "--help"]})
# The version is written once, in pyproject.toml; read (version.py) only when --version is given, and printed as
# click's version_option prints it. `agent-run --version` alone never gets here (main.py answers it).
@click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=_print_version,
              help="Show the version and exit.")
def cli() -> None:
    """Run an LLM agent headless, under a policy, with an auditable run directory.

    \b
    agent-run [OPTIONS] TASK        same as: agent-run run [OPTIONS] TASK
    """
