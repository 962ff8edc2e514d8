"""How many small CI chores an agent solves against a real model (issue 44): the task set in bench/tasks/, each run
once in a fresh git workspace, against any OpenAI-compatible endpoint.

A task is a directory: `task.md` (the task file, with its `check:` front matter) and `workspace.py` (`FILES`: the
workspace it starts from, path -> text; `KEEP`: path -> lines that must still be there afterwards; `SOLUTION`: a fix,
path -> text). After the agent
exits, the objective check decides: the task's `check:` command passes in the workspace, and every KEEP line is
still in its file (a file rewritten down to what the test needs is not a fix). The agent's own verdict (its exit
code) is shown beside it, never trusted.

Per task it prints: solved, the exit code, requests, prompt / completion / cached tokens (from the run's own record,
`.agent-run/runs/*/`; "-" for another agent) and wall time, then the totals. Not part of the suite: it needs a real
model (tests/test_bench_tasks.py checks only that each task's check fails on its fresh workspace).

    python bench/bench_solve.py --base-url http://127.0.0.1:8089/v1 --model qwen2.5-coder-1.5b-instruct
    python bench/bench_solve.py --base-url URL --model NAME --agent-cmd 'agent-run --policy full-access --preset small'
    python bench/bench_solve.py ... --agent-cmd '/other/venv/bin/agent-run --policy full-access' --json out.json
    python bench/bench_solve.py ... --runs 3   # each task 3 times: solved k / 3 per task (the model samples)

The agent command gets `--model NAME TASK_FILE` appended and runs in the workspace with OPENAI_BASE_URL and
OPENAI_API_KEY set; the task file lies beside the workspace, not in it.
"""

import argparse
import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

TASKS = Path(__file__).resolve().parent / "tasks"
DEFAULT_AGENT = "agent-run --policy full-access"
_CHECK = re.compile(r"^check:\s*(.+?)\s*$", re.M)


@dataclass
class Task:
    name: str
    task_md: str
    files: dict[str, str]
    keep: dict[str, list[str]]
    solution: dict[str, str]  # a fix (path -> text): the objective check passes on it

    @property
    def check(self) -> str:
        front = self.task_md.split("---")[1] if self.task_md.startswith("---") else ""
        found = _CHECK.search(front)
        if not found:
            raise ValueError(f"{self.name}: task.md has no check:")
        return found.group(1)


@dataclass
class Outcome:
    task: str
    solved: bool
    why: str
    exit_code: int | None
    requests: int | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None
    wall_s: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)


def load_tasks(root: Path = TASKS, names: list[str] | None = None) -> list[Task]:
    tasks = []
    for d in sorted(p for p in root.iterdir() if (p / "task.md").is_file()):
        if names and d.name not in names:
            continue
        spec = importlib.util.spec_from_file_location(f"bench_task_{d.name}", d / "workspace.py")
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        tasks.append(Task(d.name, (d / "task.md").read_text(encoding="utf-8"), dict(module.FILES),
                          dict(getattr(module, "KEEP", {})), dict(module.SOLUTION)))
    return tasks


def make(task: Task, ws: Path) -> None:
    """The task's workspace in `ws`, committed (an agent's changes are then its diff)."""
    for rel, text in task.files.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(text, encoding="utf-8")
    git = ["git", "-c", "user.email=bench@localhost", "-c", "user.name=bench"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "start"]):
        subprocess.run([*git, *args], cwd=ws, check=True, capture_output=True)


def objective(task: Task, ws: Path) -> tuple[bool, str]:
    """Whether the task is done in `ws`: its check passes and every KEEP line is still there; else why not."""
    # A .pyc compiled before a same-size edit in the same second would be taken as current: none is kept or used.
    for cache in ws.rglob("__pycache__"):
        shutil.rmtree(cache, ignore_errors=True)
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    try:
        proc = subprocess.run(["bash", "-c", task.check], cwd=ws, env=env, capture_output=True, text=True,
                              timeout=120)
    except subprocess.TimeoutExpired:
        return False, "the check timed out"
    if proc.returncode != 0:
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-1:] or [""]
        return False, f"check exit {proc.returncode}: {tail[0][:100]}"
    for rel, lines in task.keep.items():
        path = ws / rel
        text = path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""
        lost = [line for line in lines if line not in text]
        if lost:
            return False, f"{rel} lost {lost[0]!r}"
    return True, "check passes"


def _record(ws: Path) -> dict[str, Any]:
    """requests and tokens from the agent-run record in `ws` (every run of it, a resume too); {} for another agent."""
    runs = sorted((ws / ".agent-run" / "runs").glob("*/summary.json"))
    if not runs:
        return {}
    out = {"requests": 0, "prompt_tokens": 0, "completion_tokens": 0, "cached_tokens": 0}
    for summary_path in runs:
        usage = json.loads(summary_path.read_text(encoding="utf-8")).get("usage") or {}
        for key in ("prompt_tokens", "completion_tokens", "cached_tokens"):
            out[key] += int(usage.get(key) or 0)
        events = summary_path.parent / "events.jsonl"
        with events.open(encoding="utf-8", errors="replace") as f:
            out["requests"] += sum(1 for line in f if '"type":"model_request"' in line.replace(" ", ""))
    return out


def solve(task: Task, agent: list[str], model: str, base_url: str, api_key: str, timeout: float,
          keep_dir: Path | None = None) -> Outcome:
    with tempfile.TemporaryDirectory(prefix=f"solve-{task.name}-") as tmp:
        ws = Path(tmp) / "ws"
        ws.mkdir()
        make(task, ws)
        task_file = Path(tmp) / "task.md"
        task_file.write_text(task.task_md, encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENT_RUN_"))}
        env.update(OPENAI_BASE_URL=base_url, OPENAI_API_KEY=api_key)
        start = time.monotonic()
        try:
            proc = subprocess.run([*agent, "--model", model, str(task_file)], cwd=ws, env=env, capture_output=True,
                                  text=True, timeout=timeout)
            code: int | None = proc.returncode
        except subprocess.TimeoutExpired:
            code = None
        wall = time.monotonic() - start
        solved, why = objective(task, ws)
        outcome = Outcome(task.name, solved, why, code, wall_s=round(wall, 1), **_record(ws))
        if keep_dir is not None:
            subprocess.run(["cp", "-a", str(ws), str(keep_dir / task.name)], check=False)
        return outcome


def _n(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def table(outcomes: list[Outcome]) -> str:
    rows = ["| task | solved | exit | requests | prompt | completion | cached | wall s |",
            "|---|---|---:|---:|---:|---:|---:|---:|"]
    for o in outcomes:
        rows.append(f"| {o.task} | {'yes' if o.solved else 'no'} | {'timeout' if o.exit_code is None else o.exit_code}"
                    f" | {_n(o.requests)} | {_n(o.prompt_tokens)} | {_n(o.completion_tokens)} | {_n(o.cached_tokens)}"
                    f" | {o.wall_s:.0f} |")

    def total(key: str) -> int | None:
        values = [getattr(o, key) for o in outcomes]
        return None if any(v is None for v in values) else sum(values)

    rows.append(f"| **total** | **{sum(o.solved for o in outcomes)} / {len(outcomes)}** | "
                f"{sum(o.exit_code == 0 for o in outcomes)} × 0 | {_n(total('requests'))} | "
                f"{_n(total('prompt_tokens'))} | {_n(total('completion_tokens'))} | {_n(total('cached_tokens'))} | "
                f"{sum(o.wall_s for o in outcomes):.0f} |")
    return "\n".join(rows)


def rates(outcomes: list[Outcome], runs: int) -> str:
    """Per task over its runs: solved k / N, the exit codes, and the requests and tokens summed; then the totals."""
    rows = [f"| task | solved (of {runs}) | exits | requests | prompt | completion | cached | wall s |",
            "|---|---|---|---:|---:|---:|---:|---:|"]
    by_task: dict[str, list[Outcome]] = {}
    for o in outcomes:
        by_task.setdefault(o.task, []).append(o)

    def total(group: list[Outcome], key: str) -> int | None:
        values = [getattr(o, key) for o in group]
        return None if any(v is None for v in values) else sum(values)

    def row(name: str, group: list[Outcome]) -> str:
        exits = ",".join("timeout" if o.exit_code is None else str(o.exit_code) for o in group)
        return (f"| {name} | {sum(o.solved for o in group)} / {len(group)} | {exits if name[0] != '*' else ''} | "
                f"{_n(total(group, 'requests'))} | {_n(total(group, 'prompt_tokens'))} | "
                f"{_n(total(group, 'completion_tokens'))} | {_n(total(group, 'cached_tokens'))} | "
                f"{sum(o.wall_s for o in group):.0f} |")

    rows += [row(name, group) for name, group in by_task.items()]
    rows.append(row("**total**", outcomes))
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base-url", required=True, help="the OpenAI-compatible endpoint (…/v1)")
    ap.add_argument("--model", required=True)
    ap.add_argument("--agent-cmd", default=DEFAULT_AGENT,
                    help=f"the agent's command; --model NAME TASK_FILE is appended (default: {DEFAULT_AGENT})")
    ap.add_argument("--api-key", default=os.environ.get("OPENAI_API_KEY", "x"))
    ap.add_argument("--tasks", help="comma-separated task names (default: all in bench/tasks)")
    ap.add_argument("--timeout", type=float, default=1200, help="seconds per task before the agent is killed")
    ap.add_argument("--keep", type=Path, help="copy each workspace as the agent left it into this directory")
    ap.add_argument("--json", type=Path, help="also write the outcomes as JSON to this file")
    ap.add_argument("--runs", type=int, default=1,
                    help="run each task this many times (the model samples: a solve rate against its noise)")
    args = ap.parse_args(argv)
    tasks = load_tasks(names=args.tasks.split(",") if args.tasks else None)
    agent = shlex.split(args.agent_cmd)
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
    outcomes = []
    for n in range(1, args.runs + 1):
        for task in tasks:
            keep = args.keep / f"run{n}" if args.keep and args.runs > 1 else args.keep
            if keep:
                keep.mkdir(parents=True, exist_ok=True)
            o = solve(task, agent, args.model, args.base_url, args.api_key, args.timeout, keep)
            print(f"{o.task}: {'solved' if o.solved else 'not solved'} ({o.why}), exit {o.exit_code}, "
                  f"{_n(o.requests)} requests, {o.wall_s:.0f} s", file=sys.stderr, flush=True)
            outcomes.append(o)
    print(f"agent: {args.agent_cmd}\nmodel: {args.model} at {args.base_url}\n")
    print(table(outcomes) if args.runs == 1 else rates(outcomes, args.runs))
    if args.json:
        args.json.write_text(json.dumps([asdict(o) for o in outcomes], indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
