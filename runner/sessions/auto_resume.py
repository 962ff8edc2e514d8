"""`run --auto-resume N`: a run that ended on a transient cause (summary `cause` in AUTO_RESUMED: the model's server
down after its retries and fallbacks, a response that broke the protocol) is resumed by agent-run itself, after a
backoff, at most N times: each resume a new run directory in the same lineage (`resumed_from.kind: auto`, through
`execute_continue`, so every check of `agent-run resume` holds), and the chain within the first run's budgets —
`--timeout` counted from the first start, turns, tokens and cost summed. The last run's outcome is the chain's
(its exit code, its summary with `auto_resume.chain`, its run directory); `--land` lands once, after the chain,
since only a successful run lands and a resume keeps the run's landing (runner/run/land.py `keep_recorded`).

Never after a denial, a loop guard, a budget or a failed check: those are the operator's to decide (issue 46).
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

from runner.core.outcome import INTERRUPT_SIGNALS
from runner.engine.cancel import RunCancel
from runner.engine.recorder import RunOutcome, early_failure
from runner.guards.budget import Spent
from runner.model.retry import backoff
from runner.record.jsonl import iter_events
from runner.report.summary import AUTO_RESUMED
from runner.run.option_table import OPTIONS, Goes
from runner.run.options import RunOptions
from runner.sessions.resume import ContinueOptions, execute_continue

# The backoff between two runs is the model retries' (runner/model/retry.py), from the same settings' environment.
BASE_ENV, CAP_ENV = "AGENT_RUN_RETRY_BASE_S", "AGENT_RUN_RETRY_CAP_S"
POLICY_KEYS = {"max_tokens": "maxTokens", "max_cost_usd": "maxCostUsd"}  # the policy's budget section


def times_of(opts: RunOptions) -> int | str:
    """--auto-resume's N (0: off), or the refusal of an AGENT_RUN_AUTO_RESUME that is not a count."""
    value = opts.auto_resume
    if value is None or value == "":
        return 0
    try:
        times = int(value)
    except ValueError:
        return f"AGENT_RUN_AUTO_RESUME={value!r}: not a number of resumes"
    return times if times >= 0 else f"--auto-resume {times}: not a number of resumes"


def run_chain(opts: RunOptions, first: Callable[[], RunOutcome]) -> RunOutcome:
    """`first` (the run), then as many auto resumes as it earns; the last outcome."""
    times = times_of(opts)
    if isinstance(times, str):
        return early_failure(times)
    started = time.monotonic()
    outcome = first()
    if times == 0 or outcome.run_dir is None:
        return outcome
    first_dir, chain = outcome.run_dir, [outcome.run_dir.name]
    limits = _limits(opts, first_dir)
    spent = {"tokens": 0, "cost": 0.0, "requests": 0}
    for attempt in range(1, times + 1):
        summary = outcome.summary
        if summary.get("cause") not in AUTO_RESUMED or outcome.run_dir is None:
            break
        usage = summary.get("usage") or {}
        spent["tokens"] += int(usage.get("total_tokens") or 0)
        spent["requests"] += sum(1 for e in iter_events(outcome.run_dir / "events.jsonl")
                                 if e.get("type") == "model_response")  # every agent's answered request (a turn)
        spent["cost"] += float(usage.get("cost_usd") or 0.0)
        delay = backoff(attempt, _seconds(BASE_ENV, 1.0), _seconds(CAP_ENV, 30.0), None)
        left = _left(limits, summary, spent, time.monotonic() - started + delay)
        if isinstance(left, str):
            print(f"agent-run: auto-resume: not resuming {outcome.run_dir.name}: {left}", file=sys.stderr)
            break
        said = (f"agent-run: auto-resume {attempt}/{times}: {summary.get('cause')} ({summary.get('reason')}); "
                f"resuming {outcome.run_dir.name} in {delay:.1f} s")
        if (signum := _wait(delay, said)) is not None:
            print(f"agent-run: auto-resume: interrupted by {signal.Signals(signum).name} during the backoff",
                  file=sys.stderr)
            return dataclasses.replace(outcome, exit_code=128 + signum)
        spent_now = Spent(int(summary.get("turns") or 0), int(spent["tokens"]), float(spent["cost"]),
                          int(spent["requests"]))
        cont = ContinueOptions(_resume_options(opts, limits, left), str(outcome.run_dir), "resume",
                               chain=tuple(chain), chain_of=times, spent=spent_now)
        outcome = execute_continue(cont)
        if outcome.run_dir is None:  # refused before a run began (exit 2): the chain ends on that
            break
        chain.append(outcome.run_dir.name)
    return outcome


def _limits(opts: RunOptions, first_dir: Path) -> dict[str, float | None]:
    """The first run's budgets: turns and timeout as it recorded them (run_started); tokens and cost as the flag,
    the environment or the run's policy snapshot set them (an --env-file's or the task's are not read back)."""
    started = next((e for e in iter_events(first_dir / "events.jsonl") if e.get("type") == "run_started"), {})
    given = opts.cli_settings
    try:
        budget = json.loads((first_dir / "policy.json").read_text(encoding="utf-8")).get("budget") or {}
    except (OSError, ValueError, AttributeError):
        budget = {}

    def number(key: str, env: str) -> float | None:
        value = given.get(key, os.environ.get(env, budget.get(POLICY_KEYS[key])))
        try:
            return float(value) if value is not None else None
        except (TypeError, ValueError):
            return None

    return {"max_turns": started.get("max_turns"), "timeout": started.get("timeout_s"),
            "max_tokens": number("max_tokens", "AGENT_RUN_MAX_TOKENS"),
            "max_cost_usd": number("max_cost_usd", "AGENT_RUN_MAX_COST_USD")}


def _left(limits: dict[str, float | None], summary: dict[str, Any], spent: dict[str, float],
          elapsed: float) -> dict[str, Any] | str:
    """The resume's budgets (what the chain has left of the first run's), or why none is left. Turns: the
    conversation's length so far (a resume numbers its turns on from it)."""
    left: dict[str, Any] = {}
    if limits["max_turns"] is not None:
        left["max_turns"] = int(limits["max_turns"]) - int(summary.get("turns") or 0)
    if limits["timeout"] is not None:
        left["timeout"] = round(float(limits["timeout"]) - elapsed, 3)
    if limits["max_tokens"] is not None:
        left["max_tokens"] = int(limits["max_tokens"] - spent["tokens"])
    if limits["max_cost_usd"] is not None:
        left["max_cost_usd"] = round(limits["max_cost_usd"] - spent["cost"], 6)
    for name, value in left.items():
        if value <= 0:
            return f"the chain has no {name} left of the first run's"
    return left


def _resume_options(opts: RunOptions, limits: dict[str, float | None], left: dict[str, Any]) -> RunOptions:
    """The options a resume takes of the run's (the table's continued rows), with the first run's budgets (what the
    chain spent is carried: `Spent`, so a budget's ending names the first run's limit, as one run's would) and the
    wall clock the chain has left of its --timeout."""
    out = RunOptions(task="-", verbosity=opts.verbosity, stream_events=opts.stream_events)
    settings: dict[str, Any] = {}
    for option in OPTIONS:
        if not (option.shared and option.continued):
            continue
        if option.goes is Goes.RUN:
            setattr(out, option.name, getattr(opts, option.name))
        elif option.goes is Goes.SETTINGS and option.name in opts.cli_settings:
            settings[option.name] = opts.cli_settings[option.name]
    firsts = {name: int(value) if name in ("max_turns", "max_tokens") else value
              for name, value in limits.items() if value is not None and name != "timeout"}
    out.cli_settings = {**settings, **firsts, **({"timeout": left["timeout"]} if "timeout" in left else {})}
    return out


def _seconds(env: str, default: float) -> float:
    try:
        return max(0.0, float(os.environ.get(env, default)))
    except ValueError:
        return default


def _wait(seconds: float, said: str) -> int | None:
    """The backoff, on a Cancel a signal stops at once (never a bare sleep): the signal that ended it, or None.
    `said` goes to stderr once the signals are ours (a signal after it ends the wait)."""
    cancel, fired = RunCancel(), list[int | None]([None])

    def stop(signum: int, _frame: FrameType | None) -> None:
        fired[0] = fired[0] or signum
        cancel.stop()

    old = {sig: signal.signal(sig, stop) for sig in INTERRUPT_SIGNALS}
    try:
        print(said, file=sys.stderr, flush=True)
        cancel.sleep(seconds)
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
    return fired[0]
