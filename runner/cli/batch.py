"""`agent-run batch`: several tasks, each in its own run directory, optionally in parallel.

Each task runs as its own `agent-run run` process (isolation: one task's crash or
signal handling cannot take the others down). A signal to the batch is passed on
to every running task, which each finish their run directory as usual; tasks not
started yet are not started.

Parallel tasks must not share a working tree: each would list the others' edits as its own
(`changed_files`, `changes.patch`), and a run locks its workspace against that. So with
`-j N > 1` every task gets a worktree of its own (`run --isolate worktree`), which needs git;
a non-git workspace is refused unless `--shared-workspace` says the sharing is wanted.
See docs/batch.md.

On GitHub Actions (GITHUB_ACTIONS=true) the batch reports as `run` does, for all its tasks: each task
still writes its own step summary, but the step's outputs and annotations are the batch's. A task's
annotations would die with its stderr (captured here), so the batch writes every task's, titled with
the task; and its tasks do not get GITHUB_OUTPUT (each would overwrite the last one's outputs): the
batch writes one output, `results`, batch.json on one line.

With `--shard I/N` the batch runs only its slice of the task list (runner/batch/shard.py), for a CI
matrix to spread a batch over machines; `batch-merge` (cli/batch_merge.py) makes the shards' outputs one
result, written by the same code as this command's (cli/batch_output.py).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import click

from runner.batch.result import entry, worst
from runner.batch.shard import SHARD_ENV, ShardError, cut, resolve, tasks_sha256
from runner.cli.batch_output import USAGE_ERROR, format_of, refuse, report
from runner.cli.output import secrets_to_mask
from runner.core.outcome import INTERRUPT_SIGNALS
from runner.record.announce import RUN_DIR_FILE_ENV, read_announced
from runner.record.rundir import runs_dir_for
from runner.report.github import mask


@click.command("batch")
@click.argument("tasks", nargs=-1, required=True, metavar="TASK...")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=1, show_default=True,
              help="Tasks run at once. Above 1, each task runs in its own git worktree.")
@click.option("--junit", metavar="PATH", help="One JUnit XML file with one testcase per task.")
@click.option("--batch-json", metavar="PATH",
              help="Where to write the batch's result (every task's run dir, status, exit code). "
                   "[default: RUNS_DIR/batch.json]")
@click.option("--shard", metavar="I/N|auto", envvar=SHARD_ENV,
              help="Run only shard I of N (1-based): task k of the task paths sorted by code point runs in shard "
                   "k mod N + 1. auto: CI_NODE_INDEX/CI_NODE_TOTAL (GitLab parallel:), else AGENT_RUN_SHARD. "
                   "[env: AGENT_RUN_SHARD] Merge the shards' outputs with `agent-run batch-merge`.")
@click.option("--output-format", type=click.Choice(["text", "json"]),
              help="stdout: a table, or the batch.json object. [default: text]")
@click.option("--policy", metavar="PATH|NAME")
@click.option("--workspace", metavar="DIR")
@click.option("--runs-dir", metavar="DIR", help="As `run --runs-dir`. [default: WORKSPACE/.agent-run/runs]")
@click.option("--model", metavar="NAME")
@click.option("--max-turns", type=click.IntRange(min=1))
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), metavar="SECONDS")
@click.option("--max-tokens", type=click.IntRange(min=1), help="As `run --max-tokens` (each task's own budget).")
@click.option("--max-cost-usd", type=click.FloatRange(min=0, min_open=True), metavar="USD")
@click.option("--approve", "approvals", multiple=True, metavar="DOMAIN:PATTERN",
              help="As `run --approve`, for every task (repeatable).")
@click.option("--mode", type=click.Choice(["agent", "full_access"]), help="As `run --mode`.")
@click.option("--sandbox", type=click.Choice(["required", "auto", "off"]), help="As `run --sandbox`.")
@click.option("--env-file", "env_files", multiple=True, metavar="PATH", help="As `run --env-file` (repeatable).")
@click.option("--mcp-config", "mcp_configs", multiple=True, metavar="FILE",
              help="As `run --mcp-config`, for every task (repeatable).")
@click.option("--tools", metavar="LIST", help="As `run --tools`, for every task.")
@click.option("--isolate", type=click.Choice(["worktree"]),
              help="Each task in its own worktree even with -j 1 (with -j above 1 this is the default).")
@click.option("--shared-workspace", is_flag=True,
              help="Run parallel tasks in the workspace itself, sharing it (each sees the others' changes); "
                   "needed for -j above 1 outside git.")
def batch(tasks: tuple[str, ...], jobs: int, junit: str | None, batch_json: str | None, shard: str | None,
          output_format: str | None,
          policy: str | None, workspace: str | None, runs_dir: str | None, model: str | None,
          max_turns: int | None, timeout: float | None, max_tokens: int | None, max_cost_usd: float | None,
          approvals: tuple[str, ...], mode: str | None, sandbox: str | None, env_files: tuple[str, ...],
          mcp_configs: tuple[str, ...], tools: str | None, isolate: str | None, shared_workspace: bool) -> None:
    """Run TASK... (each in its own run directory), print a table, exit with the worst code.

    \b
    -j 1 runs the tasks one after another in the workspace itself. -j N above 1
    runs each task in its own worktree under WORKSPACE/.agent-run/worktrees/, so
    each run's changes.patch is its own; that needs a git workspace with a
    commit, else the batch is refused (exit 2) unless --shared-workspace.
    The result is also written to --batch-json as JSON:
    {exit_code, tasks: [{task, run_dir, status, exit_code, duration_s, worktree, ...}]}.
    See docs/batch.md.
    """
    fmt = format_of(output_format)
    on_github = os.environ.get("GITHUB_ACTIONS") == "true"
    if on_github:  # before anything is printed: the runner hides these values in the whole log from here on
        for line in mask(secrets_to_mask()):
            click.echo(line, err=True)
    home = Path(workspace or os.getcwd()).expanduser().resolve()
    isolation = _isolation(home, jobs, isolate, shared_workspace)
    if isinstance(isolation, _Refusal):
        refuse(str(isolation), fmt, on_github)
        return
    cut_of: dict[str, Any] | None = None
    if shard is not None:
        try:
            which = resolve(shard, os.environ)
        except ShardError as exc:
            refuse(str(exc), fmt, on_github)
            return
        cut_of = {"index": which.index, "total": which.total, "tasks_sha256": tasks_sha256(tasks)}
        tasks = tuple(cut(tasks, which))

    common: list[str] = []
    for flag, value in (("--policy", policy), ("--workspace", workspace), ("--runs-dir", runs_dir),
                        ("--model", model), ("--max-turns", max_turns), ("--timeout", timeout),
                        ("--max-tokens", max_tokens), ("--max-cost-usd", max_cost_usd), ("--mode", mode),
                        ("--sandbox", sandbox), ("--tools", tools)):
        if value is not None:
            common += [flag, str(value)]
    for approval in approvals:
        common += ["--approve", approval]
    for env_file in env_files:
        common += ["--env-file", env_file]
    for config in mcp_configs:
        common += ["--mcp-config", config]
    if isolation == "worktree":
        common += ["--isolate", "worktree"]
    elif isolation == "shared":
        common += ["--shared-workspace"]

    summaries = _run_all(tasks, jobs, common)
    entries = [entry(t, s) for t, s in zip(tasks, summaries, strict=True)]
    result = {"exit_code": worst(int(s.get("exit_code") or 0) for s in summaries), "jobs": jobs,
              "isolation": isolation, "workspace": str(home), "tasks": entries,
              **({"shard": cut_of} if cut_of is not None else {})}
    out = Path(batch_json).expanduser() if batch_json else runs_dir_for(runs_dir, home) / "batch.json"
    report(result, tasks, summaries, out=out, fmt=fmt, on_github=on_github, junit=junit)
    sys.exit(result["exit_code"])


class _Refusal(str):
    """Why the batch will not start (exit 2)."""


def _isolation(home: Path, jobs: int, isolate: str | None, shared: bool) -> str | _Refusal:
    """How the tasks share the workspace: "worktree" (each its own), "shared" (all in it at once) or
    "none" (one after another in it). Decided before any task starts, so a refusal runs nothing."""
    if not home.is_dir():
        return _Refusal(f"workspace {home} is not a directory")
    if isolate and shared:
        return _Refusal("--isolate worktree and --shared-workspace contradict each other: choose one")
    if shared:
        return "shared"
    if isolate is None and jobs == 1:
        return "none"
    problem = _worktree_problem(home)
    if problem is None:
        return "worktree"
    if isolate:
        return _Refusal(f"--isolate worktree: {problem}")
    return _Refusal(f"-j {jobs} runs tasks at once, each in its own worktree, but {problem}. Pass "
                    "--shared-workspace to run them all in the workspace itself (each run then lists the "
                    "others' changes as its own), or -j 1 to run them one after another")


def _worktree_problem(home: Path) -> str | None:
    """Why no worktree can be made of this workspace (a worktree would fail in every task), else None."""
    from runner.workspace.git import SafeGit, find_repo

    repo = find_repo(home)
    if repo is None:
        return f"{home} is not in a git work tree"
    git = SafeGit(home)
    try:
        head = git("rev-parse", "--verify", "-q", "HEAD").stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        return f"git could not read {repo.top} ({exc})"
    finally:
        git.close()
    return None if head else f"{repo.top} has no commit yet (a worktree starts from HEAD)"


def _run_all(tasks: tuple[str, ...], jobs: int, common: list[str]) -> list[dict[str, Any]]:
    """Every task's summary (what its `run --output-format json` printed), in the order of `tasks`."""
    children: set[subprocess.Popen[str]] = set()
    lock = threading.Lock()
    stopped: list[int] = []  # the signal that stopped the batch: tasks still queued are not started

    def forward(signum: int, _frame: Any) -> None:
        with lock:
            stopped.append(signum)
            for child in children:
                if child.poll() is None:
                    child.send_signal(signum)

    # The step's outputs are the batch's (`results`): a task writing its own would replace the previous
    # task's, and the step would end with whichever finished last.
    child_env = {k: v for k, v in os.environ.items() if k != "GITHUB_OUTPUT"}

    def run_one(task: str, announced: Path) -> dict[str, Any]:
        argv = [*_self_argv(), "run", "--output-format", "json", "-q", *common, task]
        started = time.monotonic()
        with lock:
            if stopped:
                return {"status": "not_started", "exit_code": 128 + stopped[0],
                        "reason": f"the batch was stopped by {signal.Signals(stopped[0]).name} first"}
            child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     stdin=subprocess.DEVNULL, env={**child_env, RUN_DIR_FILE_ENV: str(announced)})
            children.add(child)
        out, err = child.communicate()
        with lock:
            children.discard(child)
        # A child killed by a signal has a negative returncode; as a shell would, 128 + the signal.
        code = child.returncode if child.returncode >= 0 else 128 - child.returncode
        try:
            summary = json.loads(out)
        except json.JSONDecodeError:
            said = (err.strip().splitlines() or ["no summary"])[-1]
            if child.returncode < 0:  # killed (SIGKILL, the OOM killer): its run dir, if any, is named below
                said = f"killed by {_signal_name(-child.returncode)} before it printed a summary"
            summary = {"status": "usage_error" if code == USAGE_ERROR else "failed", "exit_code": code,
                       "reason": said}
        if not isinstance(summary, dict):
            summary = {"status": "failed", "exit_code": code, "reason": "the run printed no summary object"}
        summary.setdefault("exit_code", code)
        if code != 0 and summary["exit_code"] != code:  # it printed its summary, then failed or was killed
            summary.update(status="failed" if summary.get("status") == "success" else summary.get("status"),
                           exit_code=code, reason=f"exited {code} after printing a summary with exit code "
                                                  f"{summary['exit_code']}")
        summary.setdefault("duration_s", round(time.monotonic() - started, 3))
        _add_announced(summary, announced)
        return summary

    old = {s: signal.signal(s, forward) for s in INTERRUPT_SIGNALS}
    try:
        with tempfile.TemporaryDirectory(prefix="agent-run-batch-") as tmp:
            announced = [Path(tmp, f"task-{i}.run_dir") for i in range(len(tasks))]
            with ThreadPoolExecutor(max_workers=jobs) as pool:
                return list(pool.map(run_one, tasks, announced))
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:  # a real-time signal has no name of its own
        return f"signal {signum}"


def _add_announced(summary: dict[str, Any], announced: Path) -> None:
    """A task that printed no summary (killed: SIGKILL, the OOM killer) may still have a run directory, which
    it named in `announced` when it made it (runner/record/announce.py): batch.json names it, so it can be
    resumed."""
    if summary.get("run_dir"):
        return
    run_dir = read_announced(announced)
    if run_dir is not None:
        summary.update(run_dir=run_dir, run_id=Path(run_dir).name)


def _self_argv() -> list[str]:
    exe = Path(sys.executable).parent / "agent-run"
    if exe.exists() and os.access(exe, os.X_OK):
        return [str(exe)]
    return [sys.executable, "-m", "runner"]
