"""The run's answer rules (runner/guards/answers.py) as a judge of its agent's final answers: over the tools the run
offers, the files its workspace holds and what changed in it; a refusal asks the next request for a tool call and is
recorded as `answer_refused`.

A change is what the change tracker sees, or a call of an edit-domain tool (write, edit, delete, move) that succeeded
in the run, any agent's: a write that left a file as it was is still the change the model made (a rerun of a task)."""

from __future__ import annotations

from typing import Protocol

from runner.core.events import Event, ToolResult
from runner.engine.hooks import BeforeAnswer, Refusal
from runner.engine.recorder import Recording
from runner.engine.settings import Settings
from runner.guards.answers import AnswerGuard, Facts, workspace_files
from runner.report.changes import ChangeTracker


class Driven(Protocol):
    """What the rules read of a prepared run (runner/run/assemble.py Prepared)."""

    @property
    def offered(self) -> tuple[str, ...]: ...

    @property
    def tracker(self) -> ChangeTracker: ...

    @property
    def edits(self) -> frozenset[str]: ...  # the offered tools of the edit domain


def answer_rules(rec: Recording, run: Driven, settings: Settings) -> BeforeAnswer:
    """The judge: None when the answer stands, else what the model is told (--answer-nudges, once per kind)."""
    names, edits, edited = run.offered, run.edits, [False]

    def seen(event: Event) -> None:
        if isinstance(event, ToolResult) and event.ok and event.tool in edits:
            edited[0] = True

    rec.lifecycle.on_event(seen)
    facts = Facts(changed=lambda: edited[0] or bool(run.tracker.patch()[1]),
                  can_change=bool({"edit", "write", "bash"} & set(names)), exists=workspace_files(rec.workspace),
                  tools=names, text_calls=settings.text_tool_calls != "off")
    guard = AnswerGuard(settings.answer_nudges, facts)

    def judge(answer: str, /) -> Refusal | None:
        nudge = guard(answer)
        return Refusal("answer_refused", nudge.message, act=True, kind=nudge.reason) if nudge is not None else None

    return judge
