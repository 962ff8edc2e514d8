"""The run's answer rules (runner/guards/answers.py) as a judge of its agent's final answers: over the tools the run
offers, the files its workspace holds and what changed in it; a refusal asks the next request for a tool call and is
recorded as `answer_refused`.

A change is what the change tracker sees, or a call of an edit-domain tool (write, edit, delete, move) that succeeded
in the run, any agent's: a write that left a file as it was is still the change the model made (a rerun of a task)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from runner.core.events import Event, ToolResult, UserMessage
from runner.engine.build import Agent
from runner.engine.hooks import BeforeAnswer, Refusal
from runner.engine.recorder import Recording
from runner.engine.settings import Settings
from runner.guards.answers import AnswerGuard, Facts, workspace_files
from runner.model.text_calls import Heard
from runner.report.changes import ChangeTracker
from runner.tools.base import ToolError
from runner.tools.paths import resolve


class Driven(Protocol):
    """What the rules read of a prepared run (runner/run/assemble.py Prepared)."""

    @property
    def offered(self) -> tuple[str, ...]: ...

    @property
    def tracker(self) -> ChangeTracker: ...

    @property
    def edits(self) -> frozenset[str]: ...  # the offered tools of the edit domain

    @property
    def agent(self) -> Agent: ...


def answer_rules(rec: Recording, run: Driven, settings: Settings,
                 conversation: Sequence[dict[str, Any]] = ()) -> BeforeAnswer:
    """The judge: None when the answer stands, else what the model is told (--answer-nudges, once per kind).
    `conversation`: the messages the loop starts from."""
    names, edits, edited = run.offered, run.edits, [False]

    # Everything the model was shown but did not write — the system prompt (repository instructions in it), the task,
    # every tool message and user message, any agent's — as it received them: a call or a code block quoted from any
    # of it is never shown back as one to make. The answer rules' own nudges are left out: they show the model's.
    heard = Heard()
    heard.add(m.get("content") for m in conversation if m.get("role") != "assistant")

    def seen(event: Event) -> None:
        if isinstance(event, UserMessage) and event.reason != "answer_refused":
            heard.add([event.content])
        if isinstance(event, ToolResult):
            heard.add([event.content])
            if event.ok and event.tool in edits:
                edited[0] = True

    rec.lifecycle.on_event(seen)
    facts = Facts(changed=lambda: edited[0] or bool(run.tracker.patch()[1]),
                  can_change=bool({"edit", "write", "bash"} & set(names)), exists=workspace_files(rec.workspace),
                  tools=names, text_calls=settings.text_tool_calls != "off",
                  listening=lambda: run.agent.limits.text_calls.listening, heard=heard, read=read_text(run.agent))
    guard = AnswerGuard(settings.answer_nudges, facts)

    def judge(answer: str, /) -> Refusal | None:
        nudge = guard(answer)
        return Refusal("answer_refused", nudge.message, act=True, kind=nudge.reason) if nudge is not None else None

    return judge


READ_LIMIT = 64 * 1024  # a file larger than this is not diffed against a code block


def read_text(agent: Agent) -> Callable[[str], str | None]:
    """A workspace file's text, for a code block the model handed over to be shown back as an edit: only a file the
    agent has read (or changed) in this run, or the runner read for it (`--preset small`) — the policy let it see the
    text — and never one outside the workspace."""
    ctx = agent.env.ctx

    def read(rel: str) -> str | None:
        try:
            path = resolve(ctx, rel)
            known = str(path) in agent.state.seen or str(path) in agent.state.shown
            if not known or not path.is_file() or path.stat().st_size > READ_LIMIT:
                return None
            return path.read_text(encoding="utf-8")
        except (ToolError, OSError, UnicodeDecodeError, ValueError):
            return None

    return read
