"""Adding a run option is one row in runner/run/option_table.py plus its use: a row added here (the setting
`bash_timeout_s`, which has no flag) is offered by `run --help`, repeated by the rerun command and passed on
by batch to every task, with nothing else changed."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from runner.cli import batch as batch_cli
from runner.cli.batch import make_batch
from runner.cli.run import make_run, options_from
from runner.policy.load import load_policy
from runner.run.option_table import OPTIONS, Goes, Option, Rerun, decimal
from runner.run.options import rerun_base

ADDED = Option("--bash-timeout", "bash_timeout_s", "One bash command's default time limit.", decimal(0, above=True),
               metavar="SECONDS", goes=Goes.SETTINGS, env="AGENT_RUN_BASH_TIMEOUT_S", rerun=Rerun.SETTING,
               batch=True)
TABLE = (*OPTIONS, ADDED)


def test_an_added_row_is_in_run_help():
    out = CliRunner().invoke(make_run(TABLE), ["--help"], terminal_width=200).output
    assert "--bash-timeout SECONDS" in out and "One bash command's default time limit." in out
    assert "--bash-timeout" not in CliRunner().invoke(make_run(), ["--help"]).output


def test_an_added_row_is_a_setting_and_in_the_rerun_command(tmp_path):
    command = make_run(TABLE)
    params = command.make_context("run", ["--bash-timeout", "5", "--max-turns", "3", "task.md"]).params
    params.pop("task")
    opts, _ = options_from("task.md", params, TABLE)
    assert opts.cli_settings == {"bash_timeout_s": 5.0, "max_turns": 3}
    words = rerun_base(opts, load_policy("default"), tmp_path, tmp_path / "task.md", TABLE)
    # A setting the rerun repeats, after the budgets before it in the table.
    assert words == ["--policy", "default", "--max-turns", "3", "--bash-timeout", "5.0", "task.md"]


def test_an_added_row_is_passed_on_by_batch(tmp_path, monkeypatch):
    seen: list[list[str]] = []

    def run_all(tasks: tuple[str, ...], jobs: int, common: list[str]) -> list[dict[str, object]]:
        seen.append(common)
        return [{"status": "success", "exit_code": 0} for _ in tasks]

    monkeypatch.setattr(batch_cli, "run_all", run_all)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    args = ["--workspace", str(tmp_path), "--bash-timeout", "5", "--approve", "bash:ls", "--max-turns", "2",
            str(Path("a.md"))]
    help_text = CliRunner().invoke(make_batch(TABLE), ["--help"], terminal_width=200).output
    assert "--bash-timeout SECONDS" in help_text
    result = CliRunner().invoke(make_batch(TABLE), args)
    assert result.exit_code == 0, result.output
    assert seen == [["--workspace", str(tmp_path), "--max-turns", "2", "--bash-timeout", "5.0",
                     "--approve", "bash:ls"]]


def test_resume_and_fork_refuse_every_row_they_do_not_apply(workspace, agent_run):
    for option in (o for o in OPTIONS if not o.continued):
        for command in ("resume", "fork"):
            given = [option.flag] if option.value.kind == "switch" else [option.flag, "x.md"]
            r = agent_run(command, "no-such-run", *given)
            assert r.code == 2 and option.flag in r.stderr, (command, option.flag, r.stderr)
            assert not r.new_dirs
