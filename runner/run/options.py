"""The options a run is given: `RunOptions`, and what is derived from them — the words of the rerun
command a denial prints, and the workflow's input files the agent may not edit."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runner.policy.load import policy_ref
from runner.policy.model import Policy
from runner.record.rundir import portable
from runner.run.option_table import OPTIONS, Option, Rerun


@dataclass(frozen=True)
class LandTarget:
    """Where `github respond` lands, beside the flags: the re-run key (the trigger's sticky key; `run`'s is the task
    path), the issue the pull request closes, a same-repository pull request's head branch and commit (the commit
    goes onto that branch; no pull request is opened)."""

    key: str
    closes: int | None = None
    pull: int | None = None  # the pull request whose head branch the commit goes onto
    earlier: tuple[str, ...] | None = None  # a resume or fork: the files the runs it continues changed
    head_branch: str | None = None
    head_sha: str | None = None


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
    fork_review: bool = False  # github respond --fork-review: a review-only run (runner/run/review_only.py)
    preset: str | None = None  # --preset NAME (runner/run/preset.py): small
    task_text: str | None = None  # with task "-": the text itself, untrusted as stdin is (github respond's task)
    land: str | None = None  # --land none|commit|branch|pr (runner/run/land.py)
    land_branch: str | None = None
    land_base: str | None = None
    land_remote: str | None = None
    land_ready: bool = False
    land_allow_workflows: bool = False
    commit_author: str | None = None
    auto_resume: int | str | None = None  # --auto-resume N (its env var: text); runner/sessions/auto_resume.py
    land_to: LandTarget | None = None  # what a caller decides beside the flags (github respond: the key, the issue)


def trusted_inputs(opts: RunOptions, environ: dict[str, str], table: Sequence[Option] = OPTIONS) -> tuple[Path, ...]:
    """The workflow's files besides the policy that the runner reads (the table's `protect` rows: MCP configs,
    instructions, skills, profiles, env files, the output schema, the system prompt, in that order — a
    hard-limit rule's index follows it): the agent may not edit them (a replay reads the configs again). A
    row's environment variable (a list, os.pathsep between) adds its files after the flag's."""
    given: list[str] = []
    for option in sorted((o for o in table if o.protect is not None), key=lambda o: o.protect or 0):
        given += _words(getattr(opts, option.name))
        if option.env:
            given += [p for p in environ.get(option.env, "").split(os.pathsep) if p]
    return tuple(Path(p).expanduser() for p in given)


def rerun_base(opts: RunOptions, policy: Policy, workspace: Path, task_path: Path,
               table: Sequence[Option] = OPTIONS) -> list[str]:
    """The words after `agent-run` that rerun this task with approvals added (runner/record/commands.py
    prints it): every option that changes what the run does (the table's `rerun` rows, in the order of
    `Rerun`), paths relative to the workspace root (where it is run, from a downloaded artifact too) and a
    shipped policy by name, so the model, which sees it, gets the same text on every machine."""
    words: list[str] = []
    for option in sorted((o for o in table if o.rerun is not None), key=lambda o: o.rerun or 0):
        if option.rerun is Rerun.POLICY:
            words += [option.flag, policy_ref(policy.path, workspace)]
        elif option.rerun is Rerun.SETTING:
            if option.name in opts.cli_settings:
                words += [option.flag, str(opts.cli_settings[option.name])]
        elif option.rerun is Rerun.VALUE:
            if (value := getattr(opts, option.name)) is not None:
                words += [option.flag, str(value)]
        elif option.rerun is Rerun.SWITCH:
            words += [option.flag] if getattr(opts, option.name) else []
        else:  # PATH, TEXT, APPROVAL: each value
            for value in _words(getattr(opts, option.name)):
                words += [option.flag, portable(value, workspace) if option.rerun is Rerun.PATH else value]
    return [*words, portable(task_path, workspace)]


def resume_words(opts: RunOptions, workspace: Path, table: Sequence[Option] = OPTIONS) -> list[str]:
    """The options the printed resume repeats after the run's directory (the table's `resumed` rows: --skills,
    --agents), each path relative to the workspace root: without them the resume it prints could not serve the
    run's skills and trusted profiles, which a run directory cannot grant again."""
    words: list[str] = []
    for option in (o for o in table if o.resumed):
        for value in _words(getattr(opts, option.name)):
            words += [option.flag, portable(value, workspace)]
    return words


def _words(value: str | list[str] | None) -> list[str]:
    """A repeatable option's values; a single one's, when given."""
    return list(value) if isinstance(value, list) else [value] if value else []
