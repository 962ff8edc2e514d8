"""The run's answer rules (runner/guards/answers.py) as a judge of its agent's final answers: over the tools the run
offers, the files its workspace holds and what its change tracker saw; a refusal asks the next request for a tool
call and is recorded as `answer_refused`."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from runner.engine.hooks import BeforeAnswer, Refusal
from runner.engine.settings import Settings
from runner.guards.answers import AnswerGuard, Facts, workspace_files
from runner.report.changes import ChangeTracker


class Driven(Protocol):
    """What the rules read of a prepared run (runner/run/assemble.py Prepared)."""

    @property
    def offered(self) -> tuple[str, ...]: ...

    @property
    def tracker(self) -> ChangeTracker: ...


def answer_rules(workspace: Path, run: Driven, settings: Settings) -> BeforeAnswer:
    """The judge: None when the answer stands, else what the model is told (--answer-nudges, once per kind)."""
    names = run.offered
    facts = Facts(changed=lambda: bool(run.tracker.patch()[1]),
                  can_change=bool({"edit", "write", "bash"} & set(names)), exists=workspace_files(workspace),
                  tools=names, text_calls=settings.text_tool_calls != "off")
    guard = AnswerGuard(settings.answer_nudges, facts)

    def judge(answer: str, /) -> Refusal | None:
        nudge = guard(answer)
        return Refusal("answer_refused", nudge.message, act=True, kind=nudge.reason) if nudge is not None else None

    return judge
