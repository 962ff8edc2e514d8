"""`agent-run run`: task, policy, settings, model, call pipeline, loop — inside a Recording."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pydantic

from runner import __version__
from runner.context.manager import ContextManager
from runner.core.events import ModelRequest, RunStarted, RunWarning, UserMessage
from runner.core.frames import ResultFrames
from runner.core.inputfile import TASK_CAP, read_input_text
from runner.core.jsonutil import file_sha256, sha256_text
from runner.core.outcome import Status, UsageError
from runner.core.shown import utf8_problem
from runner.engine.build import Agent, AgentSpec, Services, build_agent, make_model
from runner.engine.call import CallEnv, bind_hooks
from runner.engine.hooks import first_refusal, refusing
from runner.engine.loop import LoopResult, Start, run_loop
from runner.engine.recorder import Recording, RunOutcome, Where, early_failure, record
from runner.engine.settings import Settings, load_settings, model_params, policy_layer
from runner.engine.userconf import ConfigError, user_config_file
from runner.guards.budget import Spent
from runner.guards.denials import DEFAULT_MAX_DENIALS, DenialGuard
from runner.mcp.setup import start_mcp
from runner.model import warm
from runner.model.replay import ReplayModel
from runner.policy.agentfiles import AgentFiles
from runner.policy.hooks import hook_programs
from runner.policy.jsonc import PolicyError
from runner.policy.limits import hard_limit_rules, protected_paths
from runner.policy.load import load_policy, policy_ref, portable_snapshot
from runner.policy.match import compile_pattern, exact_pattern
from runner.policy.model import OWN_OUTPUTS, Policy, Rule
from runner.policy.targets import path_target
from runner.record.rundir import new_run_id, portable, runs_dir_for, write_atomic, write_json
from runner.report.changes import ChangeTracker
from runner.report.deltas import TextDeltas
from runner.report.findings import keep_findings, record_findings
from runner.run import preset
from runner.run.answers import answer_rules
from runner.run.budgets import budget_for
from runner.run.changes import ChangeRecord
from runner.run.check import Attempts, run_checks
from runner.run.hooks import with_session_start, workflow_hooks
from runner.run.inputs import run_inputs, summary_copies
from runner.run.land import Landing
from runner.run.options import RunOptions, rerun_base, resume_words, trusted_inputs
from runner.run.preload import preload
from runner.run.repoconfig import repository_config, with_user_sections
from runner.run.review_only import FLAG, ReviewOnly, review_tools
from runner.run.secrets import learn_files, learn_secrets
from runner.run.task import Task, parse_task
from runner.run.toolset import offered_names, offers, pick, tools_problem
from runner.sandbox.session import start_sandbox
from runner.subagents.builtin import ALIASES
from runner.subagents.delegate import attach
from runner.tools.readable import policy_decider
from runner.tools.registry import Registry, core_tools
from runner.tools.skill import SkillTool
from runner.tools.spill import fallback_dir
from runner.tools.truncate import Limits as TruncationLimits
from runner.workspace.git import SafeGit
from runner.workspace.instructions import Instructions, InstructionsError, gather
from runner.workspace.output_schema import OutputSchema
from runner.workspace.prompt import landing_contract
from runner.workspace.skills import Skill, discover, index
from runner.workspace.trust import EnvFiles, load_env_files, narrow, task_is_trusted
from runner.workspace.worktree import WorktreeError, create_worktree


def execute(opts: RunOptions) -> RunOutcome:
    workspace = Path(opts.workspace or os.getcwd()).expanduser().resolve()
    if not workspace.is_dir():
        return early_failure(f"workspace {workspace} is not a directory")
    runs_dir = runs_dir_for(opts.runs_dir, workspace)
    task = None if opts.task == "-" else Path(opts.task).expanduser().resolve()
    for label, path in (("workspace", workspace), ("runs directory", runs_dir), ("task", task)):
        if (problem := utf8_problem(label, path)) is not None:  # before any run directory: it could not record it
            return early_failure(problem)
    if (problem := tools_problem(opts.tools)) is not None:  # an unknown built-in name: before any run directory
        return early_failure(problem)
    if not str(opts.cli_settings.get("model", "")).startswith("replay:"):
        warm.start()  # the SDK's import beside the policy load, the snapshot and the sandbox probe (model/warm.py)
    home = workspace
    if opts.isolate == "worktree":
        try:
            workspace = create_worktree(workspace, new_run_id())
        except WorktreeError as exc:
            return early_failure(str(exc))

    def body(rec: Recording) -> tuple[Status, str | None]:
        if workspace != home:
            rec.lifecycle.section("worktree", {"path": str(workspace), "of": str(home)})
        return _run(opts, rec)

    # a worktree is locked too: cleanup sees it
    return record(Where(workspace, runs_dir, home=home, shared_workspace=opts.shared_workspace), body,
                  verbosity=opts.verbosity, stream_events=opts.stream_events)


def _run(opts: RunOptions, rec: Recording) -> tuple[Status, str | None]:
    task, task_path = _read_task(opts.task, rec.run_dir, opts.task_text)
    files = learn_files(rec, load_env_files(opts.env_files))
    trusted = task_is_trusted(task_path, rec.workspace)
    rec.lifecycle.sections({"title": task.title, "task_trusted": trusted,
                            "task_file": portable(task_path, rec.workspace) if task_path else "-"})
    policy = _load_policy(opts, files, task.policy, trusted, rec)
    servers = learn_secrets(rec, opts, files, policy)  # before the settings: their errors name values
    settings = _settings(opts, files, policy, task.overrides, trusted, rec)
    try:
        instructions = gather(rec.workspace, opts.instructions, opts.append_system_prompt, opts.system_prompt,
                              project=not settings.no_project_instructions)
    except InstructionsError as exc:
        raise UsageError(str(exc)) from None
    instructions.landing = landing_contract(opts.land or "none")  # the agent's and its children's: none commit
    instructions.rule = preset.rule(opts)
    schema = OutputSchema.given(opts.output_schema, opts.findings)
    if schema is not None:  # --findings too: the section a subagent's prompt leaves out
        instructions.add_trusted("--output-schema", schema.instructions(),  # inside the workspace: relative to it
                                 portable(opts.output_schema, rec.workspace) if opts.output_schema else None,
                                 source=schema.source)
    keep_findings(rec, opts.findings, opts.sarif_denials)
    skills = load_skills(rec, opts, instructions)
    given = Given(readable=tuple(Path(d).expanduser().resolve() for d in opts.skills), skills=skills or None,
                  child_prompt=instructions.system_prompt(leave_out=("--output-schema",)),
                  started={"instructions": instructions.records or None}, servers=servers)
    run = prepare(rec, opts, files, task, policy, settings, task_path or rec.run_dir / "task.md", given)
    system = with_session_start(rec, run.agent.env.hooks, instructions.system_prompt(), run.agent.env.ctx.cancel)
    messages = [{"role": "system", "content": system},
                {"role": "user", "content": preset.task_message(task.text, task.check, opts)}]
    if preset.preloads(opts):
        messages += preload(run.agent, rec.emit, [task.text, task.check or ""], rec.workspace)
    return drive(rec, task, run, messages, schema=schema)


@dataclass(frozen=True)
class Given:
    """What a continued run brings to `prepare` besides its options: its recorded tools array (it keeps its prefix),
    the earlier runs' directories the agent may read (their spill files), the skills it serves (None: no `skill`
    tool), a subagent's system prompt before its profile (None: agent-run's own and the workspace's AGENTS.md), its
    profile directories (read as repository content), the argv printed commands start with (None: this task's),
    whether it needs a model (False: a replay that only executes calls, with no endpoint or key), whether its record
    received a structured `tool_calls` reply (then `--text-tool-calls auto` reads no call in text), the nonce each
    result it carries was framed in (AGENT_RUN_TOOL_RESULTS=user: runner/core/frames.py `carried`), extra
    run_started fields, and its MCP servers as read when its policy was known, every secret learned then
    (runner/run/secrets.py `learn_secrets`; None: read and learned here)."""

    tools: list[dict[str, Any]] | None = None
    readable: tuple[Path, ...] = ()
    skills: list[Skill] | None = None
    child_prompt: str | None = None
    profile_dirs: Sequence[str] = ()
    rerun: list[str] | None = None
    needs_model: bool = True
    structured: bool = False
    frames: dict[str, str] = field(default_factory=dict)
    started: dict[str, Any] = field(default_factory=dict)
    spent: Spent = field(default_factory=Spent)  # an auto-resume chain's earlier runs (sharing its budgets)
    servers: dict[str, Any] | None = None


@dataclass(frozen=True)
class Prepared:
    """The run's own agent, and its change record (taken before the task's check: its writes are not the agent's)."""

    agent: Agent
    changes: ChangeRecord
    landing: Landing | None = None  # --land: done by `finish` once the run's ending is known
    settings: Settings | None = None  # the run's (--check-attempts, --answer-nudges)

    @property
    def offered(self) -> tuple[str, ...]:
        return tuple(t["function"]["name"] for t in self.agent.tools)

    @property
    def tracker(self) -> ChangeTracker:
        return self.changes.tracker

    @property
    def edits(self) -> frozenset[str]:
        registry = self.agent.env.registry
        return frozenset(n for n in self.offered if (tool := registry.get(n)) is not None and tool.domain == "edit")


def prepare(rec: Recording, opts: RunOptions, files: EnvFiles, task: Task, policy: Policy, settings: Settings,
            task_path: Path, given: Given = Given()) -> Prepared:
    """Everything between a run's settings and its loop, the one path for `run`, `resume`, `fork` and `replay`:
    the run's services (budgets, the call pipeline with the policy and hard limits, the lifecycle hooks, the
    sandbox, MCP servers, subagents, change tracking), then its agent (engine/build.py), `run_started`."""
    rec.summary.policy = policy_ref(policy.path, rec.home or rec.workspace)
    rec.summary.model = settings.model
    rec.resume_with = tuple(resume_words(opts, rec.home or rec.workspace))
    servers = given.servers if given.servers is not None else learn_secrets(rec, opts, files, policy)
    deadline = rec.started + settings.timeout
    budget = budget_for(rec, policy, settings, opts.cli_settings)
    budget.carry(given.spent)
    on_delta = None
    if opts.stream_events and settings.stream:  # --stream with stream-json: text_delta lines as they arrive
        on_delta = TextDeltas(sys.stdout, rec.masker)
        rec.lifecycle.on_close(on_delta.close, first=True)
    frames = ResultFrames.drawn(given.frames) if settings.tool_results == "user" else None
    client = make_model(settings, deadline, on_delta, budget.chain, frames=frames) if given.needs_model else None
    rerun = given.rerun if given.rerun is not None else rerun_base(opts, policy, rec.workspace, task_path)
    hooks = call_env(rec, opts, files, policy, settings, deadline, rerun, given.readable)
    policy = hooks.policy  # with the run's own outputs readable and the hard limits last
    if isinstance(client, ReplayModel):  # policy.json is written by now (call_env)
        for why in client.differences(sha256_text(task.text), rec.run_dir / "policy.json"):
            print(f"agent-run: warning: replay: {why}; the recorded replies may not fit this run", file=sys.stderr)
    tools = [*core_tools(search_url=files.environ().get("AGENT_RUN_SEARCH_URL") or None).tools,
             *start_mcp(rec, hooks, servers, files.environ(), settings)]
    names = offered_names(preset.tools(opts), given.tools)  # a continued run's are its recorded ones
    if opts.fork_review:  # the read tools alone, and its agent restricted to reading the checkout (review_only.py)
        names = review_tools(names)
    if given.skills is not None and offers(names, "skill"):
        tools.append(SkillTool(given.skills))
    offered = attach(rec, policy, settings, budget, opts.agents, given.child_prompt, given.profile_dirs) \
        if offers(names, "task") else None
    if offered is not None:
        tools.append(offered.tool)
    registry = pick(rec, Registry(tools), names, sealed=given.tools is not None)  # a child picks from these too
    runs = rec.runs_dir.relative_to(rec.workspace).as_posix() if rec.runs_dir.is_relative_to(rec.workspace) else ""
    tracker = ChangeTracker(rec.workspace, SafeGit(rec.workspace, rec.ctx.sandbox), exclude=(runs,) if runs else ())
    changes = ChangeRecord(tracker, rec.run_dir, rec.ctx)
    rec.lifecycle.on_summary(changes.write)
    rec.lifecycle.on_close(tracker.close, first=True)
    landing = Landing.decide(rec, opts, tracker, task_path, os.environ)  # refused here: exit 2 before any tool call
    denials = hooks.guards[0]
    assert isinstance(denials, DenialGuard)
    services = Services(rec, budget, denials, rerun, edits=tracker,
                        delegations=offered.shared if offered is not None else None,
                        hooks=workflow_hooks(rec, policy, hooks))
    if given.structured:
        services.structured.set()
    checks = (budget.before_request, *((offered.turns,) if offered is not None else ()))
    spec = AgentSpec(policy, settings, registry, settings.max_turns, deadline, settings.timeout,
                     rec.run_dir / "history", checks=checks, chain=budget.chain, tools=given.tools,
                     restrictions=(ReviewOnly(rec.run_dir),) if opts.fork_review else (),
                     needs_model=given.needs_model, client=client)
    agent = build_agent(spec, services, rec.ctx, rec.emit)
    write_json(rec.run_dir / "tools.json", agent.tools)  # sealed: a resume sends exactly these
    inputs = run_inputs(opts.mcp_configs, registry, rec.home or rec.workspace, rec.workspace)
    rec.lifecycle.sections(summary_copies(inputs))
    box = hooks.ctx.sandbox
    assert box is not None, "call_env opened it"
    rec.emit(RunStarted(version=__version__, model=settings.model, policy=rec.summary.policy, mode=policy.mode,
                        workspace=str(rec.workspace), task_sha256=sha256_text(task.text),
                        max_turns=settings.max_turns, timeout_s=settings.timeout,
                        sandbox=box.describe(), policy_sha256=file_sha256(rec.run_dir / "policy.json"),
                        model_params=model_params(settings) or None, audit_key_id=rec.audit_key_id, inputs=inputs,
                        restriction=FLAG if opts.fork_review else None,
                        result_frames=frames.recorded() if frames else None, **given.started))
    rec.claim_keyed(rec.ctx.sandbox is not None and rec.ctx.sandbox.active)
    plan = agent.state.plan  # for the people reading the run (summary.json, step summary)
    rec.lifecycle.on_summary(lambda data: data.update(todos=plan.items) if plan.items else None)
    _metrics(rec, agent.context)
    return Prepared(agent, changes, landing, settings)


def load_skills(rec: Recording, opts: RunOptions, instructions: Instructions) -> list[Skill]:
    """Skills from --skills and the workspace; their index goes into the system prompt (runner/workspace/skills.py)."""
    skills, warnings = discover(rec.workspace, opts.skills, ALIASES)
    for warning in warnings:
        print(f"agent-run: warning: skill skipped: {warning}", file=sys.stderr)
    if skills:
        instructions.add_trusted("skills", index(skills))
        rec.lifecycle.section("skills", [{"name": s.name, "path": portable(s.directory, rec.workspace),
                                          "trusted": s.trusted} for s in skills])
    return skills


def drive(rec: Recording, task: Task, run: Prepared, messages: list[dict[str, Any]], *, turn: int = 1,
          previous: list[dict[str, Any]] | None = None, schema: OutputSchema | None = None,
          last: int | None = None) -> tuple[Status, str | None]:
    """The loop from `messages` (a continued run: from its recorded conversation, at `turn`, its last prompt's
    hash `previous`), then `finish`: the same for every kind of run. `last`: the last turn it may take (default
    --max-turns from `turn`; an auto-resume chain's: --max-turns from its first run's turn 1)."""
    agent, settings = run.agent, run.settings
    assert agent.model is not None, "prepare(needs_model=False) builds an agent that cannot be driven"
    assert settings is not None, "prepare gives a driven run its settings"
    judges = (*((refusing("output_schema", schema.check),) if schema else ()),
              *((agent.env.hooks.answer_judge("Stop", None, rec.emit, agent.env.ctx.cancel),)
                if agent.env.hooks is not None and agent.env.hooks.any("Stop") else ()),
              *((answer_rules(rec, run, settings, messages),) if schema is None and agent.tools else ()))
    check_answer = first_refusal(*judges)  # an answer under a schema is judged by its schema
    last = last if last is not None else turn + agent.limits.max_turns - 1
    result = run_loop(agent, messages, rec.emit, Start(turn, previous, last), check_answer)

    def go_on(told: str, at: int) -> int | None:
        """The check failed: the model is told, and the loop goes on at turn `at`, asked for a tool call."""
        nonlocal result
        if at > last:
            return None
        rec.emit(UserMessage(turn=at - 1, reason="check_failed", content=told))
        messages.append({"role": "user", "content": told})  # appended: the prefix stays as it was
        result = run_loop(agent, messages, rec.emit, Start(at, result.prompt, last, act=True), check_answer)
        rec.answer = result.answer
        if schema is not None:
            schema.keep(rec)
        return result.turns

    attempts = Attempts(task.attempts(settings.check_attempts), go_on, result.turns)
    return finish(rec, task, run, result, schema, attempts)


def finish(rec: Recording, task: Task, run: Prepared, result: LoopResult | None,
           schema: OutputSchema | None = None, attempts: Attempts | None = None) -> tuple[Status, str | None]:
    """How every run ends once its work is done: the output schema's answer kept, the task's check run on
    the answer, and the status (denied when anything was denied); then, with --land, the change landed
    (runner/run/land.py: `land_failed` when it cannot be). `result` None: a replay that executed approved calls
    and asked no model (no answer, nothing to check)."""
    ending = _ending(rec, task, run, result, schema, attempts)
    return run.landing.land(rec, task, run.changes, ending) if run.landing is not None else ending


def _ending(rec: Recording, task: Task, run: Prepared, result: LoopResult | None,
            schema: OutputSchema | None, attempts: Attempts | None) -> tuple[Status, str | None]:
    if schema is not None:
        schema.keep(rec)
        record_findings(rec, schema)
    if result is None:
        return rec.finished_status()
    rec.answer = result.answer
    if task.check:
        taken: list[bool] = []

        def take() -> None:  # before each check: a later one's after the agent went on
            run.changes.take(again=bool(taken))
            taken.append(True)

        failed = run_checks(task.check, run.agent.env, rec, attempts or Attempts(1, lambda _t, _a: None, result.turns),
                            take)
        if failed is not None:
            return failed
    return rec.finished_status()


def _metrics(rec: Recording, context: ContextManager) -> None:
    """summary.json `metrics`: the run's own conversation's prefix stability and cache hits, its context's
    pruning stages and peak (a subagent's first request starts a conversation of its own)."""
    requests: list[bool] = []  # extends_previous, per model request
    rec.lifecycle.on_event(lambda e: requests.append(e.extends_previous)
                         if isinstance(e, ModelRequest) and e.agent is None else None)

    def metrics(data: dict[str, Any]) -> None:
        usage = data.get("usage", {})
        data.setdefault("metrics", {}).update(
            prefix_stability_ratio=round(sum(requests[1:]) / (len(requests) - 1), 4) if len(requests) > 1 else 1.0,
            cache_hit_ratio=round(usage.get("cached_tokens", 0) / usage["prompt_tokens"], 4)
            if usage.get("prompt_tokens") else 0.0,
            pruning_stage_counts=dict(context.counts), peak_context_utilization=round(context.peak, 4),
            loop_warnings=len(data.get("loop_warnings") or []))

    rec.lifecycle.on_summary(metrics)


def call_env(rec: Recording, opts: RunOptions, files: EnvFiles, policy: Policy, settings: Settings,
             deadline: float | None, rerun: list[str], readable: tuple[Path, ...] = ()) -> CallEnv:
    """The run's base tool context and its decisions outside any agent's calls: the policy with the hard limits last
    (the workflow's files protected), decided and recorded for the sandbox's and the MCP servers' connections; the
    sandbox every process of the run is started in. `readable`: the runs a continued run may read."""
    environ = files.environ()
    rec.ctx.cancel = rec.ctx.cancel.child(deadline)  # the run's stop, with its wall clock
    rec.ctx.default_timeout_s = settings.bash_timeout_s
    agent_files = AgentFiles.of(rec.workspace, policy)  # the repository's instructions, skills and profiles
    # The hooks' programs in the workspace are the workflow's too (runner/policy/hooks.py hook_programs); so is the
    # user's config directory, which XDG_CONFIG_HOME shows commands (runner/engine/userconf.py).
    rec.ctx.protected = tuple(protected_paths(rec.workspace, rec.runs_dir, policy.files,
                                              (*trusted_inputs(opts, environ), user_config_file().parent,
                                               *hook_programs(policy.sections, rec.workspace)), agent_files))
    rec.ctx.outputs_dir = rec.run_dir / "outputs"
    rec.ctx.run_dir = rec.run_dir
    rec.ctx.truncation = TruncationLimits.from_policy(policy.sections.get("truncation", {}))
    rec.ctx.bash = policy.sections.get("bash", {})
    rec.ctx.web = policy.sections.get("web", {})
    # The agent may always read its own run (spill files, events for memory_search; spills that outputs/ could
    # not take: their fallback directory); never write it.
    # A continued run may read the runs it continues (their spill files are named in its conversation).
    own = (rec.run_dir, *readable, fallback_dir(rec.ctx.outputs_dir))
    own_outputs = [Rule("read", compile_pattern(exact_pattern(path_target(rec.workspace, d), subtree=True)),
                        "allow", OWN_OUTPUTS, i) for i, d in enumerate(own)]
    policy = policy.with_rules([*own_outputs, *hard_limit_rules(rec.workspace, rec.ctx.protected, agent_files)])
    write_json(rec.run_dir / "policy.json", portable_snapshot(policy.resolved, rec.home or rec.workspace))
    max_denials = policy.sections.get("permission", {}).get("maxDenials", DEFAULT_MAX_DENIALS)
    env = CallEnv(Registry([]), policy, rec.ctx, rec.run_id, rec.run_dir, rerun, [DenialGuard(max_denials)],
                  home=rec.home)
    bind_hooks(env, rec.emit)
    # Files grep, glob and list meet: decided like a read, not recorded; skipped unless allowed.
    rec.ctx.decide = policy_decider(env.policy)
    rec.ctx.sandbox = start_sandbox(rec, env, opts.sandbox, environ)
    return env


def _read_task(spec: str, run_dir: Path, given: str | None = None) -> tuple[Task, Path | None]:
    if spec == "-":
        path = None
        # A pipe is what stdin is for; its size is capped all the same.
        raw = given.encode("utf-8", "replace") if given is not None else sys.stdin.buffer.read(TASK_CAP + 1)
        if len(raw) > TASK_CAP:
            raise UsageError("the task on stdin is over the 1 MiB limit")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise UsageError(f"the task on stdin is not UTF-8 text (byte {exc.start}: {exc.reason})") from None
    else:
        path = Path(spec).expanduser().resolve()
        try:
            text = read_input_text(path, "task", TASK_CAP)
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"cannot read task {spec}: {getattr(exc, 'strerror', None) or exc}") from None
    if not text.strip():
        raise UsageError(f"task {spec} is empty")
    write_atomic(run_dir / "task.md", text)
    return parse_task(text, spec, path.name if path else "stdin"), path


def _load_policy(opts: RunOptions, files: EnvFiles, from_task: str | None, trusted_task: bool,
                 rec: Recording) -> Policy:
    """A trusted task's front matter names the policy (below the flag); an untrusted task's policy
    only narrows the trusted one (flag, environment, or `default`): its hooks are ignored, with a warning."""
    environ = files.environ()
    spec = opts.policy or (from_task if trusted_task else None) or environ.get("AGENT_RUN_POLICY")
    option = "--policy" if opts.policy else "the task's policy" if spec == from_task else "AGENT_RUN_POLICY"
    try:
        policy = load_policy(spec or "default", opts.approvals, option=option)
        if from_task and not trusted_task:
            own = load_policy(from_task, option="the task's policy")
            policy = policy.narrowed(own)
            if own.sections.get("hooks"):
                message = (f"the task's policy {from_task} is not trusted configuration: its hooks section is "
                           "ignored (hooks come only from a policy the workflow names, or one it extends)")
                print(f"agent-run: warning: {message}", file=sys.stderr)
                rec.emit(RunWarning(code="hooks_ignored", message=message))
    except PolicyError as exc:
        raise UsageError(str(exc)) from None
    policy = with_user_sections(policy)
    return policy.with_mode(opts.mode) if opts.mode else policy


def _settings(opts: RunOptions, files: EnvFiles, policy: Policy, from_task: dict[str, Any], trusted_task: bool,
              rec: Recording) -> Settings:
    return repository_config(rec, _trusted_settings(opts, files, policy, from_task, trusted_task, rec))


def _trusted_settings(opts: RunOptions, files: EnvFiles, policy: Policy, from_task: dict[str, Any],
                      trusted_task: bool, rec: Recording) -> Settings:
    lower = {**preset.settings(opts), **policy_layer(policy.sections)}
    if trusted_task:
        # A trusted task's own front matter beats the environment; a flag on the command line beats both.
        return settings_for({**from_task, **opts.cli_settings}, files.paths, lower)
    base = settings_for(opts.cli_settings, files.paths, lower)
    lowered, ignored = narrow(base.model_dump(), from_task)
    if ignored:
        rec.lifecycle.section("front_matter_ignored", ignored)
        # Text on stdin is untrusted too (in CI it is what the event brought: an issue body, a comment).
        source = "the task on stdin is untrusted" if rec.lifecycle.declared("task_file") == "-" else \
            "the task file is repository content"
        message = f"{source}; its front matter may only lower budgets; ignored: {'; '.join(ignored)}"
        print(f"agent-run: warning: {message}", file=sys.stderr)
        rec.emit(RunWarning(code="front_matter_ignored", message=message))
    return settings_for({**opts.cli_settings, **lowered}, files.paths, lower) if lowered else base


def settings_for(cli: dict[str, Any], env_files: tuple[Path, ...], lower: dict[str, Any]) -> Settings:
    try:
        return load_settings(cli, env_files, lower)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    except pydantic.ValidationError as exc:
        first = exc.errors()[0]
        key = ".".join(str(p) for p in first["loc"])
        got = first.get("input")
        shown = f" (got {got!r})" if isinstance(got, str | int | float) and len(str(got)) <= 80 else ""
        raise UsageError(f"{_setting_source(key, cli, env_files, lower)}: {first['msg']}{shown}") from None


def _setting_source(key: str, cli: dict[str, Any], env_files: tuple[Path, ...], lower: dict[str, Any]) -> str:
    """Where the invalid value was set, named as the person wrote it: `AGENT_RUN_MAX_TURNS` (the
    environment, or `in FILE` for an --env-file), else the setting's own name (flags and the front
    matter are checked before they get here; the policy's budget by its schema)."""
    var = key.upper() if key.upper().startswith(("AGENT_RUN_", "OPENAI_")) else f"AGENT_RUN_{key.upper()}"
    if key in cli:
        return f"invalid setting {key}"
    if any(name.upper() == var for name in os.environ):
        return var
    from dotenv import dotenv_values  # only on this error path

    for path in reversed(env_files):  # a later file wins
        if any(name.upper() == var for name in dotenv_values(path)):
            return f"{var} in {path}"
    return f"invalid setting {key}" + (" (from the policy)" if key in lower else "")
