"""docs/cli.md cannot drift from the CLI (simonw/llm's practice)."""

from __future__ import annotations

from pathlib import Path

from runner.cli.helpdoc import pages

DOC = Path(__file__).resolve().parents[1] / "docs" / "cli.md"


def test_cli_reference_is_current():
    assert DOC.read_text(encoding="utf-8") == pages(), "regenerate: python -m runner.cli.helpdoc > docs/cli.md"


def test_every_command_is_documented():
    text = DOC.read_text(encoding="utf-8")
    for name in ("run", "replay", "batch", "cleanup", "policy check", "policy explain", "policy simulate",
                 "policy suggest", "runs list", "runs show"):
        assert f"## `agent-run {name}`" in text


def test_the_lazy_command_table_matches_each_commands_own_help():
    import click

    from runner.cli.group import COMMANDS, cli

    ctx = click.Context(cli, info_name="agent-run")
    for name, (_, _, line) in COMMANDS.items():
        command = cli.get_command(ctx, name)
        assert command is not None and " ".join((command.help or "").split("\n\n")[0].split()) == line, name
