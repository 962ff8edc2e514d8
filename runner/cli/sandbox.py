"""`agent-run sandbox …`: what this machine's sandbox gives a policy, and a command tried inside it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

import click

from runner.core.outcome import EXIT_CODES, Status
from runner.policy.agentfiles import AgentFiles
from runner.policy.decide import decide
from runner.policy.egress import Verdict, net_verdict
from runner.policy.hooks import hook_programs
from runner.policy.jsonc import PolicyError
from runner.policy.limits import protected_paths
from runner.policy.load import load_policy
from runner.policy.model import Policy
from runner.policy.sandbox_config import SandboxConfig, SandboxConfigError, config_from, resolve_mode
from runner.policy.targets import network_target
from runner.record.rundir import default_runs_dir
from runner.sandbox.layout import policy_paths
from runner.sandbox.probe import probe
from runner.sandbox.runtime import Sandbox, SandboxUnavailable, open_sandbox
from runner.tools.env import scrubbed_env

USAGE = EXIT_CODES[Status.USAGE_ERROR]
_POLICY = click.option("--policy", "spec", default="default", show_default=True, metavar="PATH|NAME")
_MODE = click.option("--sandbox", "flag", type=click.Choice(["required", "auto", "off"]),
                     help="Override the policy's sandbox.mode (as `run --sandbox`).")
_WORKSPACE = click.option("--workspace", default=".", show_default=True, metavar="DIR")


@click.group("sandbox")
def sandbox() -> None:
    """The OS sandbox every command of a run is started in (docs/sandbox.md)."""


def _setup(spec: str, flag: str | None, workspace: str) -> tuple[Policy, SandboxConfig, Path]:
    try:
        policy = load_policy(spec)
        section = policy.sections.get("sandbox", {})
        config = config_from(section, resolve_mode(flag, os.environ, section))
    except (PolicyError, SandboxConfigError) as exc:
        click.echo(str(exc), err=True)
        sys.exit(USAGE)
    return policy, config, Path(workspace).expanduser().resolve()


def _open(policy: Policy, config: SandboxConfig, ws: Path) -> Sandbox:
    def decide_net(host: str, port: int) -> Verdict:
        d = decide(policy, "network", [network_target(f"{host}:{port}")])
        rule = d.deciding.rule
        click.echo(f"agent-run sandbox: network {host}:{port}: {d.effective}"
                   f"{f' (rule {rule.pattern.raw} from {rule.source})' if rule else ''}", err=True)
        return net_verdict(d)

    runs = default_runs_dir(ws)
    protected = protected_paths(ws, runs, policy.files, hook_programs(policy.sections, ws),
                                agent_files=AgentFiles.of(ws, policy))
    return open_sandbox(config, workspace=ws, protected=protected,
                        readable=policy_paths(policy.rules, "read", ws),
                        writable=policy_paths(policy.rules, "edit", ws), environ=os.environ, decide_net=decide_net)


@sandbox.command("check")
@_POLICY
@_MODE
@_WORKSPACE
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def check(spec: str, flag: str | None, workspace: str, as_json: bool) -> None:
    """What this machine supports and what POLICY would get. Exit 2 when its mode is `required`
    and the sandbox cannot be set up."""
    policy, config, ws = _setup(spec, flag, workspace)
    found = probe()
    report: dict[str, Any] = {"machine": asdict(found), "policy": policy.path}
    try:
        box = _open(policy, config, ws)
    except SandboxUnavailable as exc:
        report["sandbox"] = {"mode": config.mode, "active": False, "mechanism": None,
                             "network": config.describe_network(), "reason": str(exc)}
        _print(report, as_json)
        sys.exit(USAGE)
    try:
        report["sandbox"] = box.describe()
        if box.layout is not None:
            report["mounts"] = [{"kind": m.kind, "path": m.dest} for m in box.layout.mounts]
    finally:
        box.close()
    _print(report, as_json)


def _print(report: dict[str, Any], as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    m, s = report["machine"], report["sandbox"]
    why = "" if m["available"] else f" ({m['reason']})"
    click.echo(f"machine: {m['platform']}, mechanism {m['mechanism'] or 'none'}{why}, "
               f"landlock ABI {m['landlock_abi'] or 'none'}")
    click.echo(f"policy:  {report['policy']}")
    state = "ACTIVE" if s["active"] else "NOT ACTIVE"
    why = f", reason: {s['reason']}" if s["reason"] else ""
    click.echo(f"sandbox: {state}, mode {s['mode']}, network {json.dumps(s['network'])}{why}")
    for mount in report.get("mounts", []):
        click.echo(f"  {mount['kind']:9} {mount['path']}")


@sandbox.command("run", context_settings={"ignore_unknown_options": True})
@_POLICY
@_MODE
@_WORKSPACE
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def run_cmd(spec: str, flag: str | None, workspace: str, command: tuple[str, ...]) -> None:
    """Run COMMAND inside the sandbox POLICY gives a run (after `--`), with a run's scrubbed
    environment; exit with its status."""
    policy, config, ws = _setup(spec, flag, workspace)
    try:
        box = _open(policy, config, ws)
    except SandboxUnavailable as exc:
        click.echo(f"agent-run sandbox: {exc}", err=True)
        sys.exit(USAGE)
    try:
        if not box.active:
            click.echo(f"agent-run sandbox: WARNING: not sandboxed ({box.reason})", err=True)
        env = scrubbed_env(os.environ, (policy.sections.get("bash", {}).get("env") or {}).get("passthrough"))
        argv, env = box.wrap(list(command), env)
        code = subprocess.run(argv, cwd=ws, env=env, stdin=subprocess.DEVNULL).returncode
    finally:
        box.close()
    sys.exit(128 - code if code < 0 else code)
