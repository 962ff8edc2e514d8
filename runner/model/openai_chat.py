"""Chat completions with function calling through the official `openai` SDK.

The SDK's own retries are off (max_retries=0) so that every retry is ours: bounded,
honouring Retry-After, within the run's deadline, and recorded as an event.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import openai

from runner.events import Event, ModelRetry
from runner.model.base import ModelReply, assistant_message, usage_dict
from runner.model.retry import backoff, is_transient, retry_after
from runner.outcome import BudgetExhausted, ModelError


class OpenAIChat:
    def __init__(self, name: str, *, api_key: str | None, base_url: str | None, stream: bool,
                 max_retries: int, retry_base_s: float, retry_cap_s: float, request_timeout_s: float,
                 deadline: float | None) -> None:
        self.name = name
        self.stream = stream
        self.max_retries = max_retries
        self.retry_base_s = retry_base_s
        self.retry_cap_s = retry_cap_s
        self.request_timeout_s = request_timeout_s
        self.deadline = deadline
        self._client = openai.OpenAI(api_key=api_key, base_url=base_url, max_retries=0,
                                     timeout=request_timeout_s)

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, turn: int,
                 emit: Callable[[Event], None], timeout: float | None = None,
                 tool_choice: str | None = None) -> ModelReply:
        attempt = 0
        while True:
            attempt += 1
            try:
                return self._once(messages, tools, turn, timeout, tool_choice)
            except openai.APIStatusError as exc:
                if exc.status_code in (401, 403):
                    raise ModelError(f"model endpoint refused credentials (HTTP {exc.status_code}): "
                                     f"{_brief(exc)}") from None
                if not is_transient(exc):
                    raise ModelError(f"model request failed (HTTP {exc.status_code}): {_brief(exc)}") from None
                error, hint = f"HTTP {exc.status_code}", retry_after(dict(exc.response.headers))
            except (openai.APITimeoutError, openai.APIConnectionError) as exc:
                error, hint = type(exc).__name__, None
            except openai.OpenAIError as exc:
                raise ModelError(f"model request failed: {exc}") from None
            if self.deadline is not None and time.monotonic() >= self.deadline:
                raise BudgetExhausted("run timeout reached while waiting for the model")
            if attempt > self.max_retries:
                raise ModelError(f"model endpoint failed after {attempt} attempts: {error}")
            delay = backoff(attempt, self.retry_base_s, self.retry_cap_s, hint)
            if self.deadline is not None and time.monotonic() + delay >= self.deadline:
                raise ModelError(f"model endpoint failed ({error}); "
                                 f"retrying in {delay:.1f}s would pass the run timeout")
            emit(ModelRetry(turn=turn, attempt=attempt, error=error, delay_s=round(delay, 3)))
            time.sleep(delay)

    def _once(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], turn: int,
              timeout: float | None, tool_choice: str | None = None) -> ModelReply:
        kwargs: dict[str, Any] = {"model": self.name, "messages": messages}
        if tools:
            kwargs["tools"] = tools
            if tool_choice:
                kwargs["tool_choice"] = tool_choice
        if timeout is not None:
            kwargs["timeout"] = max(1.0, min(timeout, self.request_timeout_s))
        if not self.stream:
            resp = self._client.chat.completions.create(**kwargs)
            if not resp.choices:
                raise ModelError("model response had no choices")
            choice = resp.choices[0]
            calls = [{"id": c.id, "name": c.function.name, "arguments": c.function.arguments}
                     for c in (choice.message.tool_calls or []) if getattr(c, "function", None)]
            return ModelReply(assistant_message(choice.message.content, calls, turn), usage_dict(resp.usage),
                              choice.finish_reason)
        return self._stream(kwargs, turn)

    def _stream(self, kwargs: dict[str, Any], turn: int) -> ModelReply:
        content: list[str] = []
        calls: dict[int, dict[str, Any]] = {}
        usage = None
        finish = None
        stream = self._client.chat.completions.create(**kwargs, stream=True, stream_options={"include_usage": True})
        for chunk in stream:
            usage = chunk.usage or usage
            for choice in chunk.choices:
                finish = choice.finish_reason or finish
                delta = choice.delta
                if delta.content:
                    content.append(delta.content)
                for tc in delta.tool_calls or []:
                    slot = calls.setdefault(tc.index, {"id": None, "name": "", "arguments": ""})
                    slot["id"] = tc.id or slot["id"]
                    if tc.function is not None:
                        slot["name"] += tc.function.name or ""
                        slot["arguments"] += tc.function.arguments or ""
        ordered = [calls[i] for i in sorted(calls)]
        return ModelReply(assistant_message("".join(content), ordered, turn), usage_dict(usage), finish)


def _brief(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])[:300]
    return str(exc.message)[:300]
