"""The loop's own points, named: where a run's parts act on each call and answer today, and where lifecycle hooks
(the workflow's scripts) will attach. Each is a Protocol; the slot that holds one today is named beside it.

- `session_start`: the run has started (its `run_started` event is recorded).
- `before_call`: part of a call's decision, before the policy: may refuse it (a loaded skill's allowed-tools,
  a subagent profile's tools: `CallEnv.restrict`).
- `after_call`: a call's result as the model will see it, admitted into the context (`CallEnv.admit`).
- `before_answer`: a final answer before the run accepts it: what to tell the model instead, or None
  (`run_loop(check_answer=...)`, the output schema's check).
- `child_answer`: a subagent's answer before its parent sees it (the task tool's result).
"""

from __future__ import annotations

from typing import Protocol

from runner.core.events import RunStarted
from runner.policy.model import Target
from runner.tools.base import ToolOutput


class SessionStart(Protocol):
    def __call__(self, started: RunStarted, /) -> None: ...


class BeforeCall(Protocol):
    def refuses(self, tool: str, targets: list[Target]) -> str | None: ...


class AfterCall(Protocol):
    def __call__(self, content: str, tool: str, /) -> str: ...


class BeforeAnswer(Protocol):
    def __call__(self, answer: str, /) -> str | None: ...


class ChildAnswer(Protocol):
    def __call__(self, output: ToolOutput, /) -> ToolOutput: ...
