"""One run, start to end: run directory, policy, settings, model, loop, summary.

Whatever ends the run — success, a denial, a broken policy, a model outage, a
signal — the `finally` writes `run_finished` and `summary.json` and the exit
code comes from `outcome.exit_code`.
"""

from __future__ import annotations

import os
import signal
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pydantic
from dotenv import dotenv_values

from runner import __version__
from runner.call import CallEnv
from runner.events import Event, RunFinished, RunStarted
from runner.guards.denials import DEFAULT_MAX_DENIALS, DenialGuard
from runner.jsonutil import sha256_text
from runner.loop import Limits, run_loop
from runner.model.base import ChatModel
from runner.model.openai_chat import OpenAIChat
from runner.model.replay import ReplayModel
from runner.outcome import Interrupted, RunEnded, Status, UsageError, exit_code
from runner.policy.jsonc import PolicyError
from runner.policy.limits import hard_limit_rules, protected_paths
from runner.policy.load import load_policy
from runner.policy.model import Policy
from runner.report.progress import Progress
from runner.report.summary import SummaryBuilder
from runner.rundir import EventLog, create_run_dir, default_runs_dir, write_atomic, write_json
from runner.settings import Settings, load_settings, policy_layer
from runner.tools.base import ToolContext
from runner.tools.registry import core_tools


@dataclass
class RunOptions:
    task: str  # a path, or "-" for stdin
    policy: str | None = None
    workspace: str | None = None
    runs_dir: str | None = None
    approvals: list[str] = field(default_factory=list)
    mode: str | None = None  # overrides the policy's mode
    cli_settings: dict[str, Any] = field(default_factory=dict)  # only flags actually given
    verbosity: int = 1


@dataclass
class RunOutcome:
    exit_code: int
    summary: dict[str, Any]
    run_dir: Path | None


class _Signals:
    """First SIGINT/SIGTERM raises Interrupted where the main thread is; a second
    exits at once; once cleanup has started, signals wait for it to finish."""

    def __init__(self, ctx_abort: Any) -> None:
        self.abort = ctx_abort
        self.fired: int | None = None
        self.cleaning = False
        self._old: dict[int, Any] = {}

    def install(self) -> None:
        for sig in (signal.SIGINT, signal.SIGTERM):
            self._old[sig] = signal.signal(sig, self._handle)

    def restore(self) -> None:
        for sig, old in self._old.items():
            signal.signal(sig, old)

    def _handle(self, signum: int, _frame: Any) -> None:
        if self.cleaning:
            return
        if self.fired is not None:
            os._exit(128 + signum)
        self.fired = signum
        self.abort.set()
        raise Interrupted(signum)


def execute(opts: RunOptions) -> RunOutcome:
    workspace = Path(opts.workspace or os.getcwd()).expanduser().resolve()
    if not workspace.is_dir():
        return _early_failure(f"workspace {workspace} is not a directory")
    runs_dir = Path(opts.runs_dir).expanduser().resolve() if opts.runs_dir else default_runs_dir(workspace)
    try:
        run_id, run_dir = create_run_dir(runs_dir, workspace)
    except OSError as exc:
        return _early_failure(f"cannot create run directory in {runs_dir}: {exc}")

    started = time.monotonic()
    log = EventLog(run_dir / "events.jsonl", run_id)
    summary = SummaryBuilder(run_id, model="", policy="")
    consumers = [log, summary, Progress(sys.stderr, opts.verbosity)]

    def emit(event: Event) -> None:
        for consume in consumers:
            consume(event)

    ctx = ToolContext(workspace=workspace)
    signals = _Signals(ctx.abort)
    signals.install()
    status, reason, answer, signum = Status.FAILED, None, None, None
    try:
        try:
            task, task_path = _read_task(opts.task, run_dir)
            policy = _load_policy(opts, workspace)
            summary.policy = policy.path
            settings = _settings(opts, workspace, policy)
            summary.model = settings.model
            deadline = started + settings.timeout
            model = _model(settings, deadline)
            ctx.deadline = deadline
            ctx.default_timeout_s = settings.bash_timeout_s
            ctx.protected = tuple(protected_paths(workspace, runs_dir, policy.files))
            policy = policy.with_rules(hard_limit_rules(workspace, ctx.protected))
            write_json(run_dir / "policy.json", policy.resolved)
            rerun = _rerun_base(opts, policy, workspace, task_path or run_dir / "task.md")
            max_denials = policy.sections.get("permission", {}).get("maxDenials", DEFAULT_MAX_DENIALS)
            env = CallEnv(core_tools(), policy, ctx, run_id, run_dir, rerun, [DenialGuard(max_denials)])
            emit(RunStarted(version=__version__, model=settings.model, policy=policy.path, mode=policy.mode,
                            workspace=str(workspace), task_sha256=sha256_text(task),
                            max_turns=settings.max_turns, timeout_s=settings.timeout))
            result = run_loop(task, model, env, Limits(settings.max_turns, deadline), emit)
            answer = result.answer
            if summary.denials:
                status = Status.DENIED
                reason = f"{len(summary.denials)} tool call(s) denied by the policy; see summary.json denials"
            else:
                status = Status.SUCCESS
        except Interrupted as exc:
            status, reason, signum = exc.status, exc.reason, exc.signum
        except RunEnded as exc:
            status, reason = exc.status, exc.reason
        except Exception as exc:  # a bug of ours: record it, never lose the run
            status, reason = Status.FAILED, f"internal error: {type(exc).__name__}: {exc}"
            write_atomic(run_dir / "error.txt", traceback.format_exc())
    except Interrupted as exc:  # a signal landed inside an except block above
        status, reason, signum = exc.status, exc.reason, exc.signum
    finally:
        signals.cleaning = True
        code = exit_code(status, signum)
        emit(RunFinished(status=status.value, exit_code=code, reason=reason, turns=summary.turns,
                         tool_calls=summary.tool_calls))
        log.close()
        data = summary.build(status=status.value, exit_code=code, reason=reason,
                             duration_s=time.monotonic() - started, answer=answer)
        data["run_dir"] = str(run_dir)
        write_json(run_dir / "summary.json", data)
        signals.restore()
    return RunOutcome(code, data, run_dir)


def _early_failure(reason: str) -> RunOutcome:
    code = exit_code(Status.USAGE_ERROR)
    return RunOutcome(code, {"status": Status.USAGE_ERROR.value, "exit_code": code, "reason": reason}, None)


def _read_task(spec: str, run_dir: Path) -> tuple[str, Path | None]:
    if spec == "-":
        text, path = sys.stdin.read(), None
    else:
        path = Path(spec).expanduser().resolve()
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"cannot read task {spec}: {getattr(exc, 'strerror', None) or exc}") from None
    if not text.strip():
        raise UsageError(f"task {spec} is empty")
    write_atomic(run_dir / "task.md", text)
    return text, path


def _load_policy(opts: RunOptions, workspace: Path) -> Policy:
    spec = opts.policy or os.environ.get("AGENT_RUN_POLICY")
    if spec is None and (workspace / ".env").is_file():
        spec = dotenv_values(workspace / ".env").get("AGENT_RUN_POLICY")
    try:
        policy = load_policy(spec or "default", opts.approvals)
    except PolicyError as exc:
        raise UsageError(str(exc)) from None
    return policy.with_mode(opts.mode) if opts.mode else policy


def _settings(opts: RunOptions, workspace: Path, policy: Policy) -> Settings:
    try:
        return load_settings(opts.cli_settings, workspace, policy_layer(policy.sections))
    except pydantic.ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise UsageError(f"invalid setting {where}: {first['msg']}") from None


def _model(settings: Settings, deadline: float) -> ChatModel:
    if settings.model.startswith("replay:"):
        return ReplayModel(Path(settings.model[len("replay:") :]).expanduser())
    api_key = settings.api_key.get_secret_value() if settings.api_key else None
    if not api_key:
        if not settings.base_url:
            raise UsageError("no API key: set OPENAI_API_KEY (or point OPENAI_BASE_URL at a server that needs "
                             "none), or use --model replay:RUN_DIR")
        api_key = "not-needed"  # local servers (Ollama, llama.cpp) ignore it; the SDK insists on one
    return OpenAIChat(settings.model, api_key=api_key, base_url=settings.base_url, stream=settings.stream,
                      max_retries=settings.max_retries, retry_base_s=settings.retry_base_s,
                      retry_cap_s=settings.retry_cap_s, request_timeout_s=settings.request_timeout_s,
                      deadline=deadline)


def _rerun_base(opts: RunOptions, policy: Policy, workspace: Path, task_path: Path) -> list[str]:
    argv = ["agent-run", "--policy", policy.path, "--workspace", str(workspace)]
    if opts.mode:
        argv += ["--mode", opts.mode]
    for flag, key in (("--model", "model"), ("--max-turns", "max_turns"), ("--timeout", "timeout")):
        if key in opts.cli_settings:
            argv += [flag, str(opts.cli_settings[key])]
    for approval in opts.approvals:
        argv += ["--approve", approval]
    return [*argv, str(task_path)]

