"""The options a run is given: `RunOptions`, and what is derived from them — the words of the rerun
command a denial prints, and the workflow's input files the agent may not edit."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runner.policy.load import policy_ref
from runner.policy.model import Policy
from runner.record.rundir import portable


@dataclass
class RunOptions:
    task: str  # a path, or "-" for stdin
    policy: str | None = None
    workspace: str | None = None
    runs_dir: str | None = None
    approvals: list[str] = field(default_factory=list)
    mode: str | None = None  # overrides the policy's mode
    sandbox: str | None = None  # --sandbox: required | auto | off
    env_files: list[str] = field(default_factory=list)  # --env-file, in order
    stream_events: bool = False  # every event on stdout as it happens (--output-format stream-json)
    cli_settings: dict[str, Any] = field(default_factory=dict)  # only flags actually given
    verbosity: int = 1
    isolate: str | None = None  # "worktree": run in a private copy of the workspace (runner/workspace/worktree.py)
    shared_workspace: bool = False  # run beside another run in the same workspace
    mcp_configs: list[str] = field(default_factory=list)  # --mcp-config, in order
    instructions: list[str] = field(default_factory=list)  # --instructions FILE, in order
    append_system_prompt: list[str] = field(default_factory=list)  # --append-system-prompt TEXT, in order
    system_prompt: str | None = None  # --system-prompt FILE: replaces agent-run's own text
    output_schema: str | None = None  # --output-schema FILE
    findings: bool = False  # --findings: the built-in findings schema; findings.json, findings.sarif, annotations
    sarif_denials: bool = False  # --sarif-denials: the run's denials as SARIF results in findings.sarif too
    skills: list[str] = field(default_factory=list)  # --skills DIR, in order
    agents: list[str] = field(default_factory=list)  # --agents DIR: trusted subagent profiles, in order
    tools: str | None = None  # --tools LIST (runner/run/toolset.py); None: every tool the run has
    task_text: str | None = None  # with task "-": the text itself, untrusted as stdin is (github respond's task)


def trusted_inputs(opts: RunOptions, environ: dict[str, str]) -> tuple[Path, ...]:
    """The workflow's files besides the policy that the runner reads (MCP configs, instructions, skills,
    profiles, the output schema, env files): the agent may not edit them (a replay reads the configs again)."""
    given = [*opts.mcp_configs, *(p for p in environ.get("AGENT_RUN_MCP_CONFIG", "").split(os.pathsep) if p),
             *opts.instructions, *opts.skills, *opts.agents, *opts.env_files,
             *([opts.output_schema] if opts.output_schema else []),
             *([opts.system_prompt] if opts.system_prompt else [])]
    return tuple(Path(p).expanduser() for p in given)


# The budgets a rerun repeats, as the flags that set them. Not the model or its sampling: a rerun (which the
# model reads in a denial) must be the same text when the run is replayed with `--model replay:…`.
RERUN_SETTINGS = (("--max-turns", "max_turns"), ("--timeout", "timeout"), ("--max-tokens", "max_tokens"),
                  ("--max-cost-usd", "max_cost_usd"), ("--text-tool-calls", "text_tool_calls"))


def rerun_base(opts: RunOptions, policy: Policy, workspace: Path, task_path: Path) -> list[str]:
    """The words after `agent-run` that rerun this task with approvals added (runner/record/commands.py
    prints it): every option that changes what the run does, paths relative to the workspace root (where
    it is run, from a downloaded artifact too) and a shipped policy by name, so the model, which sees it,
    gets the same text on every machine."""
    words = ["--policy", policy_ref(policy.path, workspace)]
    if opts.mode:
        words += ["--mode", opts.mode]
    if opts.sandbox:
        words += ["--sandbox", opts.sandbox]
    if opts.isolate:
        words += ["--isolate", opts.isolate]
    if opts.tools is not None:
        words += ["--tools", opts.tools]
    for flag, key in RERUN_SETTINGS:
        if key in opts.cli_settings:
            words += [flag, str(opts.cli_settings[key])]
    system_prompt = [opts.system_prompt] if opts.system_prompt else []
    for flag, paths in (("--env-file", opts.env_files), ("--system-prompt", system_prompt),
                        ("--instructions", opts.instructions),
                        ("--skills", opts.skills), ("--agents", opts.agents), ("--mcp-config", opts.mcp_configs),
                        ("--output-schema", [opts.output_schema] if opts.output_schema else [])):
        for path in paths:
            words += [flag, portable(path, workspace)]
    words += [flag for flag, on in (("--findings", opts.findings), ("--sarif-denials", opts.sarif_denials)) if on]
    for text in opts.append_system_prompt:
        words += ["--append-system-prompt", text]
    for approval in opts.approvals:
        words += ["--approve", approval]
    return [*words, portable(task_path, workspace)]
