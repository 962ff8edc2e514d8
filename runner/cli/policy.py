"""`agent-run policy …`: check, explain, simulate, suggest — thin over runner.policy."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import click

from runner.cli.fence import prints_recorded_text
from runner.core.outcome import EXIT_CODES, Status
from runner.engine.explain import dumps, explain, explain_text, simulate, simulate_text
from runner.policy.domains import DOMAINS
from runner.policy.jsonc import PolicyError
from runner.policy.load import check_policy, load_policy, user_config_dir
from runner.policy.sandbox_config import SandboxConfigError, resolve_mode
from runner.policy.shadow import from_file, why
from runner.record.rundir import default_runs_dir, portable

USAGE = EXIT_CODES[Status.USAGE_ERROR]
DENIED = EXIT_CODES[Status.DENIED]


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
        for err in errors:  # the file relative to here when it is inside (as paths print)
            click.echo(f"{_shown(err.file)}{str(err).removeprefix(err.file)}" if err.file else str(err))
        if errors:
            failed = True
        else:
            loaded = load_policy(spec)
            click.echo(f"{_shown(loaded.path)}: ok ({len(loaded.rules)} rules, mode {loaded.mode})", err=True)
    sys.exit(USAGE if failed else 0)


def _shown(path: str) -> str:
    return portable(path, Path.cwd())


def _load(spec: str, approvals: tuple[str, ...] = ()):
    """The policy as a run given `spec` decides with it: the user's config file beneath it (its rules, mode and
    sections; runner/run/repoconfig.py), so `explain` and `simulate` agree with the run."""
    try:
        loaded = load_policy(spec, list(approvals))
    except PolicyError as exc:
        click.echo(str(exc), err=True)
        sys.exit(USAGE)
    if not (user_config_dir() / "config.toml").is_file():  # the common case: no TOML reader imported
        return loaded
    from runner.core.outcome import UsageError
    from runner.run.repoconfig import with_user_sections

    try:
        merged = with_user_sections(loaded)
    except UsageError as exc:
        click.echo(f"agent-run policy: {exc.reason}", err=True)
        sys.exit(USAGE)
    for rule, later in from_file(merged.rules, str(user_config_dir() / "config.toml")):
        if later is not None:  # the user's rules come first and the last match decides: say which never will
            click.echo(f"agent-run policy: note: the user's config rule {rule.index} (`{rule.domain} "
                       f"{rule.pattern.raw}` {rule.decision}) is {why(later)}", err=True)
    return merged


@policy.command("explain")
@click.option("--policy", "spec", default="default", show_default=True, metavar="PATH|NAME")
@click.option("--workspace", default=".", show_default=True, metavar="DIR")
@click.option("--mode", type=click.Choice(["agent", "full_access"]), help="Override the policy's mode.")
@click.option("--approve", "approvals", multiple=True, metavar="DOMAIN:PATTERN", help="As `run --approve`.")
@click.option("--json", "as_json", is_flag=True, help="Print the decision as JSON.")
@click.option("--agent", metavar="NAME", help="As a child started with subagent profile NAME: its tools, its paths "
              "scope, and the call decided within them.")
@click.option("--agents", "agent_dirs", multiple=True, metavar="DIR", help="As `run --agents` (with --agent).")
@click.argument("domain", type=click.Choice(DOMAINS))
@click.argument("input_", metavar="INPUT")
def explain_cmd(spec: str, workspace: str, mode: str | None, approvals: tuple[str, ...], as_json: bool,
                agent: str | None, agent_dirs: tuple[str, ...], domain: str, input_: str) -> None:
    """Print the decision for DOMAIN on INPUT (a path, a command line, a URL, a query): the call's
    decision, deciding rule and risk (low, medium, high: by the domain's tools, as the policy's `risk` section
    sets it), then each target with its own. --json: the same as one JSON object."""
    ws = Path(workspace).expanduser().resolve()
    loaded = _load(spec, approvals)
    sandbox = _sandbox_mode(loaded.sections)
    data = explain(loaded, domain, input_, ws, default_runs_dir(ws), mode, sandbox)
    lines: list[str] = []
    if agent is not None:
        from runner.sandbox.probe import probe
        from runner.subagents.explain import NoProfile, agent_text, explain_agent

        try:
            found = explain_agent(loaded, ws, agent, list(agent_dirs), sandbox != "off" and probe().available,
                                  (domain, input_))
        except NoProfile as exc:
            click.echo(f"agent-run policy explain: {exc}", err=True)
            sys.exit(USAGE)
        # The scope narrows what the policy allows: a call it refuses is refused for that child, whatever the policy.
        data["agent"] = {**found, "decision": "deny" if found["refused"] else data["decision"]}
        lines = ["", "", *agent_text(data["agent"])]
    click.echo(dumps(data) if as_json else explain_text(data) + "\n".join(lines))


def _sandbox_mode(sections: dict[str, Any]) -> str:
    """The sandbox's mode a run here would have without `--sandbox` (AGENT_RUN_SANDBOX, then the policy's)."""
    try:
        return resolve_mode(None, os.environ, sections.get("sandbox") or {})
    except SandboxConfigError:
        return "auto"  # a run would refuse it (exit 2); explain still answers for the policy


@policy.command("simulate")
@click.option("--policy", "spec", required=True, metavar="PATH|NAME")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON (the counts then go to stderr).")
@click.option("--fail-on-new-denials", is_flag=True,
              help="Exit 3 when any call the run made would now be denied (to gate a policy change in CI).")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@prints_recorded_text  # the recorded calls' targets
def simulate_cmd(spec: str, as_json: bool, fail_on_new_denials: bool, run_dir: Path) -> None:
    """Re-decide every tool call of a recorded run under another policy; list what changes.

    \b
    Exit codes: 0 done, 2 usage error, 3 newly denied calls (only with --fail-on-new-denials)."""
    try:
        data = simulate(_load(spec), run_dir.resolve())
    except (OSError, ValueError) as exc:
        click.echo(f"cannot simulate {run_dir}: {exc}", err=True)
        sys.exit(USAGE)
    if as_json:
        click.echo(dumps(data))
        click.echo(f"{data['calls']} calls, {len(data['changed'])} change(s): {data['newly_allowed']} newly "
                   f"allowed, {data['newly_denied']} newly denied", err=True)
    else:
        click.echo(simulate_text(data))
    if fail_on_new_denials and data["newly_denied"]:
        click.echo(f"agent-run policy simulate: {data['newly_denied']} call(s) newly denied (exit {DENIED})",
                   err=True)
        sys.exit(DENIED)


@policy.command("suggest")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@prints_recorded_text  # patterns from the denied calls' targets
def suggest_cmd(run_dir: Path) -> None:
    """The smallest allow rules that would have let a run's denied calls through, as JSONC."""
    try:
        from runner.policy.suggest import as_jsonc, suggest  # reads an event log: not on explain's path

        found = suggest(run_dir.resolve())
    except (OSError, ValueError) as exc:
        click.echo(f"cannot read {run_dir}: {exc}", err=True)
        sys.exit(USAGE)
    click.echo(as_jsonc(run_dir.resolve(), found))
