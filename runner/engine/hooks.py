"""The loop's own points, named: where a run's parts act on each call and answer today, and where lifecycle hooks
(the workflow's scripts) will attach. Each is a Protocol; the slot that holds one today is named beside it.

- `session_start`: the run has started (its `run_started` event is recorded).
- `before_call`: part of a call's decision, before the policy: may refuse it (a loaded skill's allowed-tools,
  a subagent profile's tools: `CallEnv.restrict`).
- `after_call`: a call's result as the model will see it, admitted into the context (`CallEnv.admit`).
- `before_answer`: a final answer before the run accepts it: what to tell the model instead and why (a `Refusal`),
  or None (`run_loop(check_answer=...)`: the output schema's repair, then the policy's Stop hooks, then the answer
  rules, runner/guards/answers.py; `first_refusal`).
- `child_answer`: a subagent's answer before its parent sees it (the task tool's result).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
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


@dataclass(frozen=True)
class Refusal:
    """What the model is told instead of its answer being accepted, and why (the `user_message` reason)."""

    reason: str  # output_schema | stop_hook | answer_refused
    content: str
    act: bool = False  # the next request asks for a tool call (tool_choice "required")
    kind: str | None = None  # the answer rule that refused it (an answer_refused event)


class BeforeAnswer(Protocol):
    def __call__(self, answer: str, /) -> Refusal | None: ...


def refusing(reason: str, check: Callable[[str], str | None]) -> BeforeAnswer:
    """A check that returns what to tell the model (the output schema's) as a judge of answers."""

    def judge(answer: str, /) -> Refusal | None:
        told = check(answer)
        return Refusal(reason, told) if told is not None else None

    return judge


def first_refusal(*judges: BeforeAnswer) -> BeforeAnswer | None:
    """The judges of an answer in their order (the output schema's repair, then the Stop hooks): the first refusal
    is what the model is told; None when there are none."""
    if not judges:
        return None

    def judge(answer: str, /) -> Refusal | None:
        for one in judges:
            if (refusal := one(answer)) is not None:
                return refusal
        return None

    return judge


class ChildAnswer(Protocol):
    def __call__(self, output: ToolOutput, /) -> ToolOutput: ...
