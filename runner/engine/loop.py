"""The agent loop, and only the loop: ask the model, run each call through the
hooks, append, repeat. It emits events; it writes no files and keeps no counts
beyond what it needs to stop.

The conversation is append-only: every request's messages start with the
previous request's messages, byte for byte.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from runner.context.manager import ContextManager
from runner.context.prune import CLEARED_MARKER
from runner.core.events import AnswerRefused, Emit, ModelRequest, ModelResponse, RunWarning, UserMessage
from runner.core.jsonutil import canonical, sha256_text, short
from runner.core.outcome import BudgetExhausted, Failed, Interrupted, Stopped
from runner.engine.batch import Parallel, run_calls
from runner.engine.call import CallEnv
from runner.engine.hooks import BeforeAnswer
from runner.model.base import ChatModel, ModelReply, assistant_message
from runner.model.surrogates import Mend
from runner.model.text_calls import Heard, TextCall, TextCalls, Unusable

Check = Callable[[int], None]  # before a request, with its prompt's estimated tokens: raises to stop (a budget)


@dataclass(frozen=True)
class Limits:
    max_turns: int
    # The agent's --timeout (or a child's own), for what its ending says; its clock is its Cancel's (ctx.cancel).
    timeout_s: float | None = None
    # Called with the next prompt's estimated tokens before every request; raise to stop (budgets).
    checks: tuple[Check, ...] = ()
    # Called with every reply and its prompt's estimated tokens (usage accounting: estimates, warnings).
    replies: tuple[Callable[[ModelReply, int], None], ...] = ()
    # --text-tool-calls: how a call a small model wrote in its text is read (run, or the model told why not)
    text_calls: TextCalls = field(default_factory=TextCalls)
    parallel: Parallel = field(default_factory=Parallel)  # calls of one reply run at once (runner/engine/batch.py)


@dataclass
class LoopResult:
    answer: str
    turns: int
    prompt: list[dict[str, Any]] | None = None  # the messages of the last request (a continuation extends them)


def serialize_prompt(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> str:
    """The bytes that identify a request's prompt (hashed into model_request)."""
    return canonical({"tools": tools, "messages": messages})


Snapshot = Callable[[list[dict[str, Any]]], dict[str, str] | None]


class Runnable(Protocol):
    """What the loop runs: an agent (runner/engine/build.py Agent)."""

    @property
    def model(self) -> ChatModel | None: ...

    @property
    def env(self) -> CallEnv: ...

    @property
    def limits(self) -> Limits: ...

    @property
    def context(self) -> ContextManager: ...

    @property
    def tools(self) -> list[dict[str, Any]]: ...

    def recite(self, turn: int, compacted: bool) -> str | None: ...


@dataclass(frozen=True)
class Start:
    """Where a conversation starts: a new one at turn 1; a continued one at its next turn, its `previous` prompt
    (which its first request must extend). `last`: the last turn it may take (default: `max_turns` from `turn`);
    `act`: its first request asks for a tool call (the check failed: runner/run/check.py)."""

    turn: int = 1
    previous: list[dict[str, Any]] | None = None
    last: int | None = None
    act: bool = False


def run_loop(agent: Runnable, messages: list[dict[str, Any]], emit: Emit, start: Start = Start(),
             check_answer: BeforeAnswer | None = None) -> LoopResult:
    """Runs `agent` until its model answers without tool calls. `messages` is only appended to, except where the
    context manager prunes (in batches). A resumed conversation passes its history and where it goes on (`start`);
    the agent's `tools` are what its requests send (a continued run's: the recorded array). The context keeps a
    snapshot of the messages as sent whenever they do not simply extend this loop's previous request
    (runner/record/conversation.py rebuilds from them); the agent's plan is recited before a request after a
    compaction or a long stretch. `check_answer` returns what to tell the model, and why, when a final answer is not
    acceptable (--output-schema, the Stop hooks, the answer rules), None when it is; it raises to end the run. A
    refusal that asks for an action (the answer rules: runner/guards/answers.py) makes the next request ask for a tool
    call (`tool_choice: "required"`), as `start.act` does for the first."""
    model, env, limits, context, tools = agent.model, agent.env, agent.limits, agent.context, agent.tools
    assert model is not None, "an agent built without a model (a replay that only executes calls) is not looped"
    snapshot, recite, first_turn, previous = context.snapshot, agent.recite, start.turn, start.previous
    names = [t["function"]["name"] for t in tools]
    reader, heard = limits.text_calls, Heard()  # what tool messages showed the model: a call quoted from one is none
    if reader.listening:
        heard.add(m.get("content") for m in messages if m.get("role") == "tool")
    sent: list[dict[str, Any]] | None = None  # this loop's previous request
    told: str | None = None  # what the previous final answer lacked, once the model has been told
    act = start.act  # the next request asks for a tool call
    last = start.last if start.last is not None else first_turn + limits.max_turns - 1
    for turn in range(first_turn, last + 1):
        remaining = _remaining(limits, env)
        compactions = _compactions(context)
        if context is not None:
            messages = context.prepare(messages, tools, turn, placeholder)
            context.bind(messages, tools)
        recited = recite(turn, _compactions(context) > compactions) if recite is not None and turn > first_turn \
            else None
        if recited:
            emit(UserMessage(turn=turn, reason="recitation", content=recited))
            messages.append({"role": "user", "content": recited})  # appended: the prefix stays as it was
        prompt = serialize_prompt(messages, tools)
        estimated = context.tokens(messages, tools)  # the context's count (its Estimator), the one every check takes
        for check in limits.checks:
            check(estimated)
        previous = sent if sent is not None else previous
        extends = previous is not None and messages[: len(previous)] == previous
        fresh = sent is None or messages[: len(sent)] != sent
        emit(ModelRequest(turn=turn, message_count=len(messages), estimated_tokens=estimated,
                          prompt_bytes=len(prompt.encode("utf-8")), prompt_sha256=sha256_text(prompt),
                          stage=context.stage if context else "none",
                          prefix_hash=sha256_text(serialize_prompt(messages[:2], tools)),
                          extends_previous=extends, snapshot=snapshot(messages) if fresh else None))
        sent = list(messages)
        started = time.monotonic()
        reply = model.complete(messages, tools, turn=turn, emit=emit, timeout=remaining,
                               tool_choice="required" if act else None)
        act = False
        if reply.estimated:  # the server counted nothing: the client's chars/4, in the context's count
            reply = replace(reply, usage=context.estimator.counted(reply.usage, len(prompt), estimated))
        emit(ModelResponse(turn=turn, message=reply.message, usage=reply.usage, finish_reason=reply.finish_reason,
                           duration_s=round(time.monotonic() - started, 4)))
        for observe in limits.replies:
            observe(reply, estimated)
        found = reader.read(reply.message, names, heard)
        message, source = with_text_call(reply.message, found, turn, emit)
        messages.append(message)
        calls = message.get("tool_calls") or []
        if not calls:
            refused = _refused(message, reply.finish_reason, found, told, turn, emit, check_answer)
            if refused is None:
                return LoopResult(answer=message.get("content") or "", turns=turn, prompt=sent)
            told, act = refused.lacking or told, refused.act
            emit(UserMessage(turn=turn, reason=refused.reason, content=refused.content))
            messages.append({"role": "user", "content": refused.content})  # appended: the prefix stays as it was
            continue
        told = None
        contents = run_calls(calls, env, turn, emit, source=source, parallel=limits.parallel,
                             before=lambda: _remaining(limits, env))
        messages.extend({"role": "tool", "tool_call_id": call.get("id", ""), "content": content}
                        for call, content in zip(calls, contents, strict=True))
        if reader.listening:
            heard.add(contents)
    raise BudgetExhausted(f"max turns reached ({limits.max_turns}) before the model finished",
                          budget={"name": "max_turns", "limit": limits.max_turns, "used": limits.max_turns})


_CUT_OFF = frozenset({"length", "content_filter"})


@dataclass(frozen=True)
class _Refused:
    """A final reply the run does not end on: the user message sent instead (its `reason`), whether the next request
    asks for a tool call, and what an unusable answer lacked (a second one ends the run)."""

    reason: str
    content: str
    act: bool = False
    lacking: str | None = None


def _refused(message: dict[str, Any], finish_reason: str | None, found: TextCall | Unusable | None,
             told: str | None, turn: int, emit: Emit, check_answer: BeforeAnswer | None) -> _Refused | None:
    """None when the reply without tool calls is the answer; raises when it ends the run (cut off, unusable again)."""
    if finish_reason in _CUT_OFF:
        raise Failed(f"the model's final answer was cut off (finish_reason={finish_reason})", cause="protocol")
    lacking = unusable_answer(message.get("content"), found)
    if lacking is not None:
        if told is not None:
            raise Failed(f"the model's final answer {lacking[0]}, again after being told", cause="protocol")
        return _Refused(lacking[2], lacking[1], lacking=lacking[0])
    answer = message.get("content") or ""
    refusal = check_answer(answer) if check_answer is not None else None
    if refusal is None:
        return None
    if refusal.kind is not None:
        emit(AnswerRefused(turn=turn, reason=refusal.kind))
    return _Refused(refusal.reason, refusal.content, act=refusal.act)


def _compactions(context: ContextManager | None) -> int:
    """Stages 2 and 3 so far: a plan is recited after either (the conversation lost detail)."""
    return context.counts["hard_clear"] + context.counts["summarize"] if context is not None else 0


def with_text_call(message: dict[str, Any], found: TextCall | Unusable | None, turn: int,
                   emit: Emit) -> tuple[dict[str, Any], str | None]:
    """The reply as appended, and the source of its calls: a reply without `tool_calls` whose text was read as
    one call of an offered tool (`found`, runner/model/text_calls.py) carries that call, id `call_<turn>_0`,
    its text kept as content, because servers reject a `tool` message that answers no call. `model_response`
    records the reply as received; runner/record/conversation.py rebuilds this message from the
    `tool_call` event (`source: "text"`)."""
    if message.get("tool_calls") or not isinstance(found, TextCall):
        return message, None
    mend = Mend()  # the text's own JSON may escape half a character's pair: its parse is where the half enters
    message = assistant_message(message.get("content"), [{"name": found.name, "arguments": found.arguments}],
                                turn, mend)
    if mend.replaced:
        emit(RunWarning(code="lone_surrogate", message=f"turn {turn}: the call written in the model's text held "
                        f"{mend.replaced} lone UTF-16 surrogate{'s' if mend.replaced > 1 else ''} (half of a "
                        f"character's pair), replaced by U+FFFD"))
    return message, "text"


def unusable_answer(content: str | None, found: TextCall | Unusable | None) -> tuple[str, str, str] | None:
    """(what is wrong, what the model is told, the user_message reason) for a final answer that is no
    answer: empty, or call-shaped text that could not be run (`found`: two calls, one that does not parse or
    names no tool of this run). None for an answer; text not read for calls (`--text-tool-calls off`, or `auto`
    for a model that makes structured calls) is one."""
    if not (content or "").strip():
        # The call first: a 1.5B model told "answer in plain text, or call a tool" after an empty reply answered in
        # prose that it had done the work (bench/bench_solve.py).
        return ("was empty", "[agent-run: your reply was empty. Go on with the task: call a tool through the "
                             "tool_calls field of your reply, or, once it is done, answer in plain text.]",
                "empty_answer")
    if not isinstance(found, Unusable):
        return None
    return (f"was a tool call written as text that could not be run ({found.what})",
            f"[agent-run: your reply holds {found.what}: nothing was run. Call tools through the tool_calls field "
            "of your reply (function calling); written as text, a call must be the only call and the last thing in "
            "the reply. Answer in plain text when done.]",
            "text_tool_call")


def placeholder(call_id: str, tool: str, arguments: str, content: str) -> str:
    """What replaces a cleared tool result: which call it was, and where the full output is."""
    # Short on purpose: placeholders stay in the context for the rest of the run.
    args = short(arguments, 60)
    spilled = _SPILL_PATH.search(content)
    where = f"the full output is in {spilled.group(1)}; " if spilled else ""
    return f"{CLEARED_MARKER}: {tool} {args} (call {call_id}); {where}memory_search finds it]"


_SPILL_PATH = re.compile(r"[Ff]ull output: (\S+?/outputs/tool_\w+)")


def _remaining(limits: Limits, env: CallEnv) -> float | None:
    """Seconds left on the agent's clock (None: no limit); raises when it is up, or when this agent is told to stop
    (a child whose caller is ending, or an interrupt a worker thread's process start held)."""
    cancel = env.ctx.cancel
    if cancel.stopping():
        signum = cancel.signalled
        if signum is not None:
            raise Interrupted(signum)
        raise Stopped("stopped: the agent that delegated this task is ending")
    left = cancel.remaining()
    if left is not None and left <= 0:
        raise BudgetExhausted(f"run timeout reached ({limits.timeout_s}s) before the model finished",
                              budget={"name": "timeout_s", "limit": limits.timeout_s})
    return left
