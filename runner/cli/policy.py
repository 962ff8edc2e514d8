"""`agent-run policy …`: check, explain, simulate, suggest — thin over runner.policy."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from runner.outcome import EXIT_CODES, Status
from runner.policy.explain import dumps, explain, simulate
from runner.policy.jsonc import PolicyError
from runner.policy.load import check_policy, load_policy
from runner.policy.model import DOMAINS
from runner.policy.suggest import as_jsonc, suggest
from runner.rundir import default_runs_dir

USAGE = EXIT_CODES[Status.USAGE_ERROR]


@click.group("policy")
def policy() -> None:
    """Validate policies and predict their decisions."""


@policy.command("check")
@click.argument("files", nargs=-1, required=True, metavar="FILE...")
def check(files: tuple[str, ...]) -> None:
    """Validate policy files: exit 0, or exit 2 with `file:line:col: message` lines."""
    failed = False
    for spec in files:
        errors = check_policy(spec)
        for err in errors:
            click.echo(str(err))
        if errors:
            failed = True
        else:
            loaded = load_policy(spec)
            click.echo(f"{loaded.path}: ok ({len(loaded.rules)} rules, mode {loaded.mode})", err=True)
    sys.exit(USAGE if failed else 0)


def _load(spec: str, approvals: tuple[str, ...] = ()):
    try:
        return load_policy(spec, list(approvals))
    except PolicyError as exc:
        click.echo(str(exc), err=True)
        sys.exit(USAGE)


@policy.command("explain")
@click.option("--policy", "spec", default="default", show_default=True, metavar="PATH|NAME")
@click.option("--workspace", default=".", show_default=True, metavar="DIR")
@click.option("--mode", type=click.Choice(["agent", "full_access"]), help="Override the policy's mode.")
@click.option("--approve", "approvals", multiple=True, metavar="DOMAIN:PATTERN", help="As `run --approve`.")
@click.argument("domain", type=click.Choice(DOMAINS))
@click.argument("input_", metavar="INPUT")
def explain_cmd(spec: str, workspace: str, mode: str | None, approvals: tuple[str, ...], domain: str,
                input_: str) -> None:
    """Print the decision for DOMAIN on INPUT (a path, a command line, a URL, a query) as JSON."""
    ws = Path(workspace).expanduser().resolve()
    data = explain(_load(spec, approvals), domain, input_, ws, default_runs_dir(ws), mode)
    click.echo(dumps(data))


@policy.command("simulate")
@click.option("--policy", "spec", required=True, metavar="PATH|NAME")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
def simulate_cmd(spec: str, run_dir: Path) -> None:
    """Re-decide every tool call of a recorded run under another policy; list what changes."""
    try:
        data = simulate(_load(spec), run_dir.resolve())
    except (OSError, ValueError) as exc:
        click.echo(f"cannot simulate {run_dir}: {exc}", err=True)
        sys.exit(USAGE)
    click.echo(dumps(data))
    click.echo(f"{data['calls']} calls, {len(data['changed'])} change(s): {data['newly_allowed']} newly allowed, "
               f"{data['newly_denied']} newly denied", err=True)


@policy.command("suggest")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
def suggest_cmd(run_dir: Path) -> None:
    """The smallest allow rules that would have let a run's denied calls through, as JSONC."""
    try:
        found = suggest(run_dir.resolve())
    except (OSError, ValueError) as exc:
        click.echo(f"cannot read {run_dir}: {exc}", err=True)
        sys.exit(USAGE)
    click.echo(as_jsonc(run_dir.resolve(), found))
