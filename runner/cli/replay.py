"""`agent-run replay`: execute a finished run's denied calls with a human's approval."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from runner.cli.output import finish, with_github
from runner.core.outcome import EXIT_CODES, Status, UsageError
from runner.sessions.replay import describe_call, load_run, replay, select


@click.command("replay")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--call", "calls", multiple=True, metavar="ID", help="Only this denied call (repeatable; default all).")
@click.option("--approve", is_flag=True, help="Approve and execute them (without it: list what would run).")
@click.option("--continue", "resume", is_flag=True, help="Then continue the conversation with the model.")
@click.option("--model", metavar="NAME", help="Model for --continue. [default: the recorded run's]")
@click.option("--max-turns", type=click.IntRange(min=1), help="Turn budget for --continue (exit 5).")
@click.option("--max-tokens", type=click.IntRange(min=1),
              help="Prompt + completion token budget for --continue (exit 5).")
@click.option("--max-cost-usd", type=click.FloatRange(min=0, min_open=True), metavar="USD",
              help="Cost budget for --continue, from usage and the model's price (exit 5).")
@click.option("--stream/--no-stream", default=None, help="Stream model responses (--continue).")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), metavar="SECONDS",
              help="Whole-run wall-clock limit, the approved calls included (exit 5).")
@click.option("--sandbox", type=click.Choice(["required", "auto", "off"]),
              help="As `run --sandbox` (default: the recorded policy's sandbox.mode, else auto).")
@click.option("--expect-hash", metavar="SHA256",
              help="Refuse unless the run directory's integrity hash is this one (the action output "
                   "events-sha256 / the step summary): for a run directory downloaded from CI.")
@click.option("--allow-unkeyed", is_flag=True,
              help="With AGENT_RUN_AUDIT_KEY set: accept a run directory that is not keyed under that key (its "
                   "hash chain is then only as good as without a key).")
@click.option("--policy", "policy_spec", metavar="PATH|NAME",
              help="Decide under this policy instead of the run's snapshot (required for a run that was never "
                   "sealed).")
@click.option("--workspace", metavar="DIR",
              help="Where to run them. [default: the workspace the run directory sits in, else the recorded one]")
@click.option("--force", is_flag=True, help="Run even if the workspace is not in the state the run left it in.")
@click.option("--apply-changes", is_flag=True,
              help="First apply the run's changes.patch to the workspace (a fresh checkout of the run's base).")
@click.option("--mcp-config", "mcp_configs", multiple=True, metavar="FILE",
              help="MCP servers, as `run --mcp-config`. [default: the files the run was given]")
@click.option("--output-format", type=click.Choice(["text", "json", "stream-json"]),
              help="stdout: the final answer, the summary JSON, or every event as a JSON line as it happens. "
                   "[default: text]")
@click.option("-q", "--quiet", is_flag=True)
def replay_cmd(run_dir: Path, calls: tuple[str, ...], approve: bool, resume: bool, model: str | None,
               max_turns: int | None, max_tokens: int | None, max_cost_usd: float | None, stream: bool | None,
               timeout: float | None, sandbox: str | None, expect_hash: str | None,
               allow_unkeyed: bool, policy_spec: str | None, workspace: str | None, force: bool, apply_changes: bool,
               mcp_configs: tuple[str, ...], output_format: str | None, quiet: bool) -> None:
    """Execute the denied calls of RUN_DIR exactly as the model asked, under that run's policy
    with just those calls approved; record them in a new run directory."""
    run_dir = run_dir.resolve()
    # What only a conversation with the model uses: refused without --continue rather than ignored.
    for_model = {"model": model, "max_turns": max_turns, "max_tokens": max_tokens, "max_cost_usd": max_cost_usd,
                 "stream": stream}
    if not resume and (given := [k for k, v in for_model.items() if v is not None]):
        flags = ", ".join("--stream/--no-stream" if k == "stream" else "--" + k.replace("_", "-") for k in given)
        raise click.UsageError(f"{flags}: only with --continue (without it no model is asked)")
    fmt = output_format or os.environ.get("AGENT_RUN_OUTPUT_FORMAT") or "text"
    if not approve:
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
        return
    overrides = {**for_model, "timeout": timeout}
    outcome, reporter = with_github(lambda: replay(run_dir, list(calls), resume=resume,
                                                   cli_settings={k: v for k, v in overrides.items() if v is not None},
                                                   verbosity=0 if quiet else 1, sandbox=sandbox,
                                                   expect_hash=expect_hash, policy_spec=policy_spec,
                                                   workspace=workspace, force=force, apply_changes=apply_changes,
                                                   mcp_configs=list(mcp_configs), allow_unkeyed=allow_unkeyed,
                                                   stream_events=fmt == "stream-json"))
    finish(outcome, reporter, fmt=fmt, quiet=quiet)
