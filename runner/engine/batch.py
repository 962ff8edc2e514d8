"""The calls of one model reply, run through the call pipeline (runner/engine/call.py): in the model's order, except
that a run of consecutive calls that cannot change the workspace or the world (tools marked `concurrent = "read"`:
read, grep, glob, list, memory_search, web_fetch, skill, MCP tools the trusted config marks read-only), or a run of
consecutive `task` calls (child agents, `concurrent = "agent"`), runs at once, up to `--parallel-calls` and
`--parallel-agents`.

What stays sequential, so that a run with concurrency decides, records and stops as the same run without it:
- each call is recorded (`tool_call`) and decided by the policy (`permission_decision`) on the loop's thread, in
  the model's order, before any of the group runs; a group ends at a call that was refused or denied (the denial
  guard may stop the run there), at a call of a tool that `narrows` (a `skill` call: what it loads narrows the
  calls after it), and before a call identical to one already in it (the doom-loop guard counts repeats);
- results are admitted (context stage 1), seen by the guards and recorded (`tool_result`) in the model's order, each
  as soon as it and every call before it have finished; the tool messages go back in that order, so the prompt is
  byte for byte a sequential run's.

Every call of a group works under the group's Cancel (runner/engine/cancel.py), a child of the agent's: it stops at
the agent's stop and wall clock whatever thread it runs on. When the time is up each call ends by itself, as one
running alone does (a grep's "the run's time is up"), and those endings are recorded, in order, before the run ends on
its clock. A group that ends early (a guard's stop, an interrupt, the run's clock) stops what still runs in it and
waits LET_GO_S at most: a call that has not stopped by then is let go (its process groups killed; whatever it would
still record comes after the run's seal and is dropped).
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import wait as wait_futures
from dataclasses import dataclass
from typing import Any

from runner.core.events import Emit
from runner.core.outcome import Stopped
from runner.engine.call import Begun, CallEnv, begin, execute, fingerprint, finish
from runner.engine.settings import Settings
from runner.tools.base import STOPPING, Cancel, ToolError, ToolOutput

# How long a group waits for its calls once they are told to stop (or their time is up) before it lets go of them:
# they ask the Cancel between steps (a process is killed within 0.2 s, a grep stops between slices of matching, a
# child agent before its next request or call). GitHub sends SIGTERM 7.5 s after a cancel's SIGINT: the record must
# be complete well before.
LET_GO_S = 1.0
STOP_POLL_S = 0.1  # how often the loop's wait for a call asks the agent's Cancel (a signal raises at once)


@dataclass(frozen=True)
class Parallel:
    calls: int = 4  # --parallel-calls: read-only calls at once; 1 runs them one by one
    agents: int = 4  # --parallel-agents: child agents at once


def parallel_of(settings: Settings) -> Parallel:
    """From runner.engine.settings.Settings (--parallel-calls, --parallel-agents)."""
    return Parallel(calls=settings.parallel_calls, agents=settings.parallel_agents)


def run_calls(calls: list[dict[str, Any]], env: CallEnv, turn: int, emit: Emit, *, source: str | None,
              parallel: Parallel, before: Callable[[], float | None]) -> list[str]:
    """The `tool` message contents for `calls`, in their order. `before` is called before each call is started
    (the loop's clock: it raises when the run's time is up) and returns the seconds left (None: no limit)."""
    contents: list[str] = []
    index = 0
    while index < len(calls):
        limit = _limit(_kind(calls[index], env), parallel)
        if limit <= 1:
            before()
            contents.append(finish(begun := begin(calls[index], env, turn, emit, source=source, index=index),
                                   execute(begun, env), env, emit))
            index += 1
            continue
        group = _begin_group(calls, index, env, turn, emit, source, before)
        contents.extend(_run_group(group, env, emit, limit, before))
        index += len(group)
    return contents


def _kind(call: dict[str, Any], env: CallEnv) -> str | None:
    tool = env.registry.get(call.get("function", {}).get("name", ""))
    return tool.concurrent if tool is not None else None


def _limit(kind: str | None, parallel: Parallel) -> int:
    return parallel.calls if kind == "read" else parallel.agents if kind == "agent" else 1


def _begin_group(calls: list[dict[str, Any]], start: int, env: CallEnv, turn: int, emit: Emit, source: str | None,
                 before: Callable[[], float | None]) -> list[Begun]:
    """The calls from `start` that run together, each recorded and decided (see the module's docstring)."""
    kind = _kind(calls[start], env)
    group: list[Begun] = []
    seen: set[str] = set()
    for index in range(start, len(calls)):
        call = calls[index]
        function = call.get("function", {})
        same = fingerprint(function.get("name", ""), function.get("arguments", ""))
        if group and (_kind(call, env) != kind or same in seen):
            break
        before()
        begun = begin(call, env, turn, emit, source=source, index=index)
        group.append(begun)
        seen.add(same)
        tool = env.registry.get(begun.name)
        if begun.result is not None or (tool is not None and tool.narrows):
            break
    return group


def _run_group(group: list[Begun], env: CallEnv, emit: Emit, limit: int,
               before: Callable[[], float | None]) -> list[str]:
    runnable = [b for b in group if b.result is None]
    if len(runnable) <= 1:  # nothing to overlap: on the loop's thread, where the tools' own deadlines hold
        return [finish(b, execute(b, env), env, emit) for b in group]
    stop = env.ctx.cancel.child()
    slots = threading.BoundedSemaphore(limit)
    futures = {id(b): _start(functools.partial(execute, b, env, cancel=stop), slots) for b in runnable}
    grace = _Grace()
    contents: list[str] = []
    try:
        for b in group:
            result = b.result if b.result is not None else _wait(futures[id(b)], stop, grace, before)
            contents.append(finish(b, result, env, emit))
    except BaseException:
        stop.stop()
        pending = [f for f in futures.values() if not f.cancel()]
        wait_futures(pending, timeout=grace.left())
        stop.kill_processes()  # what is let go runs no process past this point
        raise
    return contents


class _Grace:
    """LET_GO_S from when the group first waited past its stop or its clock: then it lets go of its calls."""

    def __init__(self) -> None:
        self.until: float | None = None

    def left(self) -> float:
        if self.until is None:
            self.until = time.monotonic() + LET_GO_S
        return max(0.0, self.until - time.monotonic())


def _wait(future: Future[ToolOutput | ToolError], cancel: Cancel, grace: _Grace,
          before: Callable[[], float | None]) -> ToolOutput | ToolError:
    """The call's result. Told to stop, the agent ends at once (`before`, the loop's clock, raises its ending). Out of
    time, the call ends by itself on the wall clock, on its worker as on the loop's thread: its ending is waited for
    (LET_GO_S at most for the whole group) and recorded, then `before` ends the run on its clock."""
    while not future.done():
        why = cancel.why()
        if why is None:
            left = cancel.remaining()
            wait_futures([future], timeout=STOP_POLL_S if left is None else max(min(left, STOP_POLL_S), 0.001))
            continue
        if why == STOPPING:
            before()
        wait_futures([future], timeout=grace.left())
        if not future.done():
            before()
            raise Stopped("the run's time is up and a call of this group did not stop")  # before() raised already
    if future.exception() is not None and cancel.why() is not None:
        before()  # the agent's own ending comes first (a child's clock is not the run's)
    return future.result()


def _start(work: Callable[[], ToolOutput | ToolError], slots: threading.BoundedSemaphore,
           ) -> Future[ToolOutput | ToolError]:
    """`work` on a daemon thread once a slot is free. Daemon: a run that ends on its clock leaves a call that does
    not stop behind instead of hanging the process's exit (a ThreadPoolExecutor's threads are joined at exit)."""
    future: Future[ToolOutput | ToolError] = Future()

    def target() -> None:
        with slots:
            if not future.set_running_or_notify_cancel():
                return
            try:
                future.set_result(work())
            except BaseException as exc:  # re-raised on the loop's thread, in the model's order
                future.set_exception(exc)

    threading.Thread(target=target, name="tool-call", daemon=True).start()
    return future
