"""`agent-run replay`: execute a finished run's denied calls with a human's approval."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from runner.cli.fence import fenced
from runner.cli.flags import named, output_format
from runner.cli.output import finish, with_github
from runner.core.outcome import EXIT_CODES, Status, UsageError
from runner.run.option_table import row
from runner.sessions.replay import ReplayRequest, describe_call, load_run, replay, select

# What only a conversation with the model uses: refused without --continue rather than ignored.
FOR_MODEL = ("--model", "--max-turns", "--max-tokens", "--max-cost-usd", "--stream")


@click.command("replay")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--call", "calls", multiple=True, metavar="ID", help="Only this denied call (repeatable; default all).")
@click.option("--approve", is_flag=True, help="Approve and execute them (without it: list what would run).")
@click.option("--continue", "resume", is_flag=True, help="Then continue the conversation with the model.")
@click.option("--skip-hooks", is_flag=True,
              help="Run the approved calls without the policy's PreToolUse and PostToolUse hooks (the approval "
                   "answers the policy, not a hook: without this a hook that refused a call judges it again). "
                   "Recorded as a warning hooks_skipped.")
@named("replay", "--model", "--max-turns", "--max-tokens", "--max-cost-usd", "--stream", "--timeout", "--sandbox")
@click.option("--expect-hash", metavar="SHA256",
              help="Refuse unless the run directory's integrity hash is this one (the action output "
                   "events-sha256 / the step summary): for a run directory downloaded from CI.")
@click.option("--allow-unkeyed", is_flag=True,
              help="With AGENT_RUN_AUDIT_KEY set: accept a run directory that is not keyed under that key (its "
                   "hash chain is then only as good as without a key).")
@named("replay", "--policy", "--workspace")
@click.option("--force", is_flag=True, help="Run even if the workspace is not in the state the run left it in.")
@click.option("--apply-changes", is_flag=True,
              help="First apply the run's changes.patch to the workspace (a fresh checkout of the run's base).")
@named("replay", "--mcp-config", "--output-format", "--quiet")
def replay_cmd(run_dir: Path, calls: tuple[str, ...], approve: bool, resume: bool, skip_hooks: bool,
               expect_hash: str | None, allow_unkeyed: bool, force: bool, apply_changes: bool, **kw: Any) -> None:
    """Execute the denied calls of RUN_DIR exactly as the model asked, under that run's policy
    with just those calls approved; record them in a new run directory."""
    run_dir = run_dir.resolve()
    if not resume and (given := [o.flags for o in map(row, FOR_MODEL) if kw[o.name] is not None]):
        raise click.UsageError(f"{', '.join(given)}: only with --continue (without it no model is asked)")
    fmt = output_format(kw["output_format"])
    policy_spec, quiet = kw["policy"], kw["quiet"]
    if not approve:
        with fenced():  # the calls as recorded (with --approve, the run's own reporting fences what it prints)
            _list(run_dir, calls, expect_hash, policy_spec, allow_unkeyed)
        return
    settings = {o.name: kw[o.name] for o in map(row, (*FOR_MODEL, "--timeout")) if kw[o.name] is not None}
    request = ReplayRequest(run_dir, list(calls), resume=resume, cli_settings=settings, verbosity=0 if quiet else 1,
                            sandbox=kw["sandbox"], expect_hash=expect_hash, policy_spec=policy_spec,
                            workspace=kw["workspace"], force=force, apply_changes=apply_changes,
                            mcp_configs=list(kw["mcp_configs"]), allow_unkeyed=allow_unkeyed,
                            stream_events=fmt == "stream-json", skip_hooks=skip_hooks)
    outcome, reporter = with_github(lambda: replay(request))
    finish(outcome, reporter, fmt=fmt, quiet=quiet)


def _list(run_dir: Path, calls: tuple[str, ...], expect_hash: str | None, policy_spec: str | None,
          allow_unkeyed: bool) -> None:
    """The denied calls `--approve` would run: one line each on stdout, what each runs on stderr."""
    try:
        chosen = select(load_run(run_dir, expect_hash, policy_spec, allow_unkeyed), list(calls))
    except UsageError as exc:
        click.echo(f"agent-run: {exc.reason}", err=True)
        sys.exit(EXIT_CODES[Status.USAGE_ERROR])
    except (OSError, ValueError, KeyError, TypeError) as exc:  # not a run directory as this version writes them
        click.echo(f"agent-run: cannot list {run_dir.name}: {type(exc).__name__}: {exc}", err=True)
        sys.exit(EXIT_CODES[Status.USAGE_ERROR])
    for c in chosen:
        click.echo(f"{c['ref']}\t{c['tool']}\t{c['arguments']}\t{c['decision']['policy_decision']}")
        click.echo(f"  would run {describe_call(c)}", err=True)
    click.echo(f"{len(chosen)} denied call(s); add --approve to execute them", err=True)
