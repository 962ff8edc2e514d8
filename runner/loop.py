"""The agent loop, and only the loop: ask the model, run each call through the
hooks, append, repeat. It emits events; it writes no files and keeps no counts
beyond what it needs to stop.

The conversation is append-only: every request's messages start with the
previous request's messages, byte for byte.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from runner.call import CallEnv, handle_call
from runner.events import Emit, ModelRequest, ModelResponse
from runner.jsonutil import canonical, estimate_tokens, sha256_text
from runner.model.base import ChatModel
from runner.outcome import BudgetExhausted, Failed
from runner.prompt import SYSTEM_PROMPT


@dataclass(frozen=True)
class Limits:
    max_turns: int
    deadline: float | None  # time.monotonic() value; None for no wall-clock limit


@dataclass
class LoopResult:
    answer: str
    turns: int


def serialize_prompt(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> str:
    """The bytes that identify a request's prompt (hashed into model_request)."""
    return canonical({"tools": tools, "messages": messages})


def run_loop(task: str, model: ChatModel, env: CallEnv, limits: Limits, emit: Emit) -> LoopResult:
    tools = env.registry.specs()
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": task},
    ]
    for turn in range(1, limits.max_turns + 1):
        remaining = _remaining(limits)
        prompt = serialize_prompt(messages, tools)
        emit(ModelRequest(turn=turn, message_count=len(messages), estimated_tokens=estimate_tokens(len(prompt)),
                          prompt_bytes=len(prompt.encode("utf-8")), prompt_sha256=sha256_text(prompt)))
        started = time.monotonic()
        reply = model.complete(messages, tools, turn=turn, emit=emit, timeout=remaining)
        emit(ModelResponse(turn=turn, message=reply.message, usage=reply.usage, finish_reason=reply.finish_reason,
                           duration_s=round(time.monotonic() - started, 4)))
        messages.append(reply.message)
        calls = reply.message.get("tool_calls") or []
        if not calls:
            if reply.finish_reason in _CUT_OFF:
                raise Failed(f"the model's final answer was cut off (finish_reason={reply.finish_reason})")
            return LoopResult(answer=reply.message.get("content") or "", turns=turn)
        for call in calls:
            _remaining(limits)
            content = handle_call(call, env, turn, emit)
            messages.append({"role": "tool", "tool_call_id": call.get("id", ""), "content": content})
    raise BudgetExhausted(f"max turns reached ({limits.max_turns}) before the model finished")


_CUT_OFF = frozenset({"length", "content_filter"})


def _remaining(limits: Limits) -> float | None:
    if limits.deadline is None:
        return None
    left = limits.deadline - time.monotonic()
    if left <= 0:
        raise BudgetExhausted("run timeout reached before the model finished")
    return left
