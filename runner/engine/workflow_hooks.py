"""The workflow's lifecycle hooks (the policy's `hooks` section, docs/hooks.md) as one typed service of the run,
built once (runner/run/hooks.py) and shared by every agent: the loop's points ask it, in the model's order, what the
workflow's own programs say.

A hook only narrows: at `PreToolUse` it may turn the policy's allow into deny or ask, never the reverse (an
`allow` is recorded and ignored); at `PostToolUse` it adds context beside the result or a block's reason; at `Stop`
and `SubagentStop` it refuses an answer, at most `maxBlocks` times; at `SessionStart` it adds context before the
first request. Reading what a hook said (its exit code and stdout, Claude Code's contract) is pure: `outcome`.
Running it (the sandbox, its own principal) is the `HookProcess` a higher floor hands in.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from runner.core.events import Emit, HookFinished, HookStarted, RunWarning
from runner.core.jsonutil import canonical
from runner.core.outcome import Failed
from runner.engine.hooks import BeforeAnswer, Refusal
from runner.policy.decide import CallDecision
from runner.policy.hooks import HookCommand, HookEntry
from runner.tools.base import Cancel, Tool, ToolContext

TAIL_LINES = 20
REASON_CAP = 4000  # what the model is told of a refusal, at most (characters)
# What is kept of a hook's stdout, and of its stderr: their first and last halves, in memory, never on disk (a hook
# printing gigabytes must not fill the disk before its timeout). A longer stdout cannot be read as its answer.
OUTPUT_CAP = 1 << 20


@dataclass(frozen=True)
class HookRun:
    """What running one hook program gave: its exit code (None: it did not start, or was killed), its output (at
    most OUTPUT_CAP of each, the gap marked), why it failed to run (a timeout, a start that failed), and how many
    bytes it wrote on stdout (`stdout_bytes`, more than was kept when over OUTPUT_CAP)."""

    exit_code: int | None
    stdout: str
    stderr: str
    duration_s: float
    failure: str | None = None
    stdout_bytes: int = 0


class HookProcess(Protocol):
    """Runs one hook program with `payload` on its stdin, within `cancel` (the run's stop and clock); `writable`:
    the paths it may write besides the workspace when the entry says `writes` (runner/run/hooks.py)."""

    def __call__(self, command: HookCommand, payload: str, cancel: Cancel, writable: Sequence[Path]) -> HookRun: ...


@dataclass(frozen=True)
class Outcome:
    """What one hook said. `decision`: allow | deny | ask | block | stop, or None (go on as decided)."""

    decision: str | None = None
    reason: str | None = None
    context: str | None = None
    error: str | None = None  # why it failed (then `decision` is onError's)


def outcome(run: HookRun, on_error: str, event: str) -> Outcome:
    """Claude Code's contract: exit 2 blocks with stderr as the reason; exit 0 goes on, its stdout may be JSON
    (`decision: block`, `hookSpecificOutput.permissionDecision`, `continue: false`, `additionalContext`), else
    plain text, which is context at SessionStart only (elsewhere it is only recorded); any other exit, a timeout,
    unreadable JSON or a stdout longer than OUTPUT_CAP (not kept whole) is a failure, which `onError` deny turns
    into a refusal."""
    if run.failure is None and run.exit_code == 2:
        return Outcome("block", run.stderr.strip() or "blocked by a hook")
    failure = run.failure or (f"exit code {run.exit_code}" if run.exit_code != 0 else None)
    if failure is None and run.stdout_bytes > OUTPUT_CAP:
        failure = f"its stdout passed {OUTPUT_CAP >> 20} MiB ({run.stdout_bytes} bytes): too long to read as its answer"
    said: Any = None
    text = run.stdout.strip()
    if failure is None and text.startswith("{"):
        try:
            said = json.loads(text)
        except (json.JSONDecodeError, RecursionError):
            failure = "its stdout starts like JSON but is not"
    if failure is not None:
        return Outcome("deny" if on_error == "deny" else None, f"a hook failed ({failure})", error=failure)
    if not isinstance(said, dict):
        return Outcome(context=(text or None) if event == "SessionStart" else None)
    found = said.get("hookSpecificOutput")
    specific: dict[str, Any] = found if isinstance(found, dict) else {}
    context = _text(specific.get("additionalContext")) or _text(said.get("additionalContext"))
    if said.get("continue") is False:
        return Outcome("stop", _text(said.get("stopReason")) or "a hook stopped the run", context)
    permission = specific.get("permissionDecision")
    if permission in ("deny", "ask", "allow"):
        return Outcome(permission, _text(specific.get("permissionDecisionReason")) or _text(said.get("reason")),
                       context)
    if said.get("decision") == "block":
        return Outcome("block", _text(said.get("reason")) or "blocked by a hook", context)
    if said.get("decision") in ("approve", "allow"):
        return Outcome("allow", _text(said.get("reason")), context)
    return Outcome(context=context)


def _text(value: object) -> str | None:
    return value[:REASON_CAP] if isinstance(value, str) and value.strip() else None


@dataclass(frozen=True)
class Judged:
    """The hooks of one point, taken together: the strictest refusal (deny before ask before block) with its
    reason, every context, and a stop (`continue: false`)."""

    refusal: str | None = None  # deny | ask | block
    reason: str | None = None
    context: str | None = None
    stop: str | None = None
    allowed: bool = False  # some hook said allow (recorded; never widens)
    hooks: list[dict[str, Any]] = field(default_factory=list)  # each hook's record, for the call's audit line


_STRICT = {"block": 2, "deny": 2, "ask": 1}


@dataclass
class WorkflowHooks:
    """The run's hooks: every entry of the trusted policy's section, the program that runs them, and what their
    JSON input always carries (the run id, its events.jsonl, the workspace)."""

    entries: tuple[HookEntry, ...]
    process: HookProcess
    run_id: str
    transcript: Path
    workspace: Path
    _blocks: dict[tuple[str, int, str], int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def any(self, event: str) -> bool:
        return any(e.event == event for e in self.entries)

    def matching(self, event: str, names: Sequence[str] = ()) -> list[HookEntry]:
        return [e for e in self.entries if e.event == event and e.matches(names)]

    def judge(self, event: str, names: Sequence[str], fields: dict[str, Any], emit: Emit, cancel: Cancel,
              call_id: str | None = None, writable: Sequence[Path] = ()) -> Judged:
        """Every matching hook of `event`, one after another in the policy's order, each with the contract's input
        (`fields` over the common ones)."""
        payload = canonical({"session_id": self.run_id, "transcript_path": str(self.transcript),
                             "cwd": str(self.workspace), "hook_event_name": event, **fields})
        refusal: tuple[int, str, str | None] | None = None
        contexts: list[str] = []
        stop: str | None = None
        allowed = False
        records: list[dict[str, Any]] = []
        for entry in self.matching(event, names):
            for command in entry.hooks:
                said = self._run(entry, command, payload, emit, cancel, call_id, writable)
                records.append({"event": event, "matcher": entry.matcher, "command": command.command,
                                "decision": said.decision, "error": said.error})
                if said.context:
                    contexts.append(said.context)
                if said.decision == "stop":
                    stop = stop or said.reason
                elif said.decision == "allow":
                    allowed = True
                elif said.decision in _STRICT and (refusal is None or _STRICT[said.decision] > refusal[0]):
                    refusal = (_STRICT[said.decision], said.decision, said.reason)
        return Judged(refusal[1] if refusal else None, refusal[2] if refusal else None,
                      "\n\n".join(contexts) or None, stop, allowed, records)

    def _run(self, entry: HookEntry, command: HookCommand, payload: str, emit: Emit, cancel: Cancel,
             call_id: str | None, writable: Sequence[Path]) -> Outcome:
        emit(HookStarted(event=entry.event, matcher=entry.matcher, command=command.command, call_id=call_id))
        run = self.process(command, payload, cancel, writable)
        said = outcome(run, command.on_error, entry.event)
        tail = "\n".join((run.stdout + ("\n" if run.stdout and run.stderr else "") + run.stderr).rstrip()
                         .splitlines()[-TAIL_LINES:])
        emit(HookFinished(event=entry.event, matcher=entry.matcher, command=command.command, call_id=call_id,
                          exit_code=run.exit_code, duration_s=round(run.duration_s, 4), decision=said.decision,
                          reason=said.reason if said.decision not in (None, "allow") else None, error=said.error,
                          output_tail=tail or None))
        if said.error is not None:
            emit(RunWarning(code="hook_failed", message=f"{entry.label()} hook `{command.command}` failed: "
                            f"{said.error}" + ("; the call is refused (onError: deny)" if said.decision == "deny"
                                               else "; going on as decided")))
        return said

    def refuse_answer(self, event: str, answer: str, agent: dict[str, Any] | None, emit: Emit,
                      cancel: Cancel) -> str | None:
        """`Stop` (the run's answer) or `SubagentStop` (a child's): what to tell the model instead of accepting
        `answer`, or None. An entry that has refused `maxBlocks` times and refuses again ends the run (exit 1),
        naming its hook."""
        if not self.any(event):
            return None
        aid = agent["id"] if agent else "main"
        for entry in self.matching(event):
            judged = self.judge_entry(entry, {"stop_hook_active": self._count(entry, aid) > 0,
                                              "last_assistant_message": answer, "agent": agent}, emit, cancel)
            if judged.stop is not None:
                raise Failed(f"the {entry.label()} hook stopped the run: {judged.stop}")
            if judged.refusal is None:
                continue
            with self._lock:
                used = self._blocks.get((event, entry.index, aid), 0)
                if used >= entry.max_blocks:
                    commands = ", ".join(f"`{h.command}`" for h in entry.hooks)
                    raise Failed(f"the {entry.label()} hook {commands} refused the answer {used + 1} times "
                                 f"(maxBlocks {entry.max_blocks}): {judged.reason}")
                self._blocks[(event, entry.index, aid)] = used + 1
            return f"[agent-run: a {event} hook refused your answer: {judged.reason}]"
        return None

    def answer_judge(self, event: str, agent: dict[str, Any] | None, emit: Emit, cancel: Cancel) -> BeforeAnswer:
        """`Stop` or `SubagentStop` as a judge of the loop's answers (runner/engine/hooks.py BeforeAnswer)."""

        def judge(answer: str, /) -> Refusal | None:
            told = self.refuse_answer(event, answer, agent, emit, cancel)
            return Refusal("stop_hook", told) if told is not None else None

        return judge

    def judge_entry(self, entry: HookEntry, fields: dict[str, Any], emit: Emit, cancel: Cancel) -> Judged:
        one = WorkflowHooks((entry,), self.process, self.run_id, self.transcript, self.workspace)
        return one.judge(entry.event, (), fields, emit, cancel)

    def _count(self, entry: HookEntry, aid: str) -> int:
        with self._lock:
            return self._blocks.get((entry.event, entry.index, aid), 0)


# Claude Code's argument names, beside agent-run's, for its tools' aliases: a formatter reading
# `tool_input.file_path` works unchanged.
_CLAUDE_ARGS = {"path": "file_path"}


def claude_input(tool: Tool, args: dict[str, Any], workspace: Path) -> dict[str, Any]:
    """`tool_name` (agent-run's), `claude_tool_name` (its first alias, else its name) and `tool_input`: the
    arguments, and for an aliased tool Claude Code's names beside them (`file_path`, absolute as Claude's)."""
    tool_input = dict(args)
    if tool.aliases:
        for ours, theirs in _CLAUDE_ARGS.items():
            if isinstance(args.get(ours), str) and theirs not in tool_input:
                tool_input[theirs] = str(workspace / args[ours])
    return {"tool_name": tool.name, "claude_tool_name": tool.aliases[0] if tool.aliases else tool.name,
            "tool_input": tool_input}


def pre_tool_use(hooks: WorkflowHooks, tool: Tool, args: dict[str, Any], call_id: str,
                 agent: dict[str, Any] | None, decision: CallDecision, emit: Emit, ctx: ToolContext) -> Judged:
    """The call's PreToolUse hooks, as part of its decision (the policy allowed it): on the loop's thread, in the
    model's order, before its group of parallel calls starts. A `continue: false` ends the run (exit 1)."""
    judged = hooks.judge("PreToolUse", (tool.name, *tool.aliases),
                         {**claude_input(tool, args, ctx.workspace), "call_id": call_id, "agent": agent,
                          "decision": decision.effective, "risk": decision.risk}, emit, ctx.cancel, call_id)
    if judged.stop is not None:
        raise Failed(f"a PreToolUse hook stopped the run: {judged.stop}")
    return judged
