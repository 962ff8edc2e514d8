"""Sending a chat-completions request through the `openai` SDK without its per-request walk.

`client.chat.completions.create(...)` runs `maybe_transform` over the whole request, which
visits every message, every content part and every tool schema in Python, for every request:
on a long run that was 96% of the runner's CPU, growing with the conversation. This module
sends the same request through the client's own lower-level path, `client.post(...)`, with the
body already serialised to JSON bytes (C `json`, no per-element Python). Everything else is the
SDK's: the connection pool, authentication headers, the timeout, the client's retry setting
(ours: off), the parsing into `ChatCompletion` or an SSE `Stream[ChatCompletionChunk]`, and the
error types (`openai.APIStatusError`, `APITimeoutError`, `APIConnectionError`) that
`OpenAIChat.complete` retries on.
"""

from __future__ import annotations

import json
from typing import Any

import openai
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from runner.model.retry import RETRY_STATUSES, BadResponse

PATH = "/chat/completions"
# Keyword arguments of `create` that are request options, not body fields.
_OPTIONS = frozenset({"timeout", "extra_headers", "extra_query", "extra_body"})


def encode_body(body: dict[str, Any]) -> bytes:
    """The JSON body (UTF-8, compact separators), keys sorted: the same conversation is the same bytes
    however its messages were built — live, or read back from a run directory by a resume."""
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False,
                      sort_keys=True).encode("utf-8")


def create_chat_completion(client: openai.OpenAI, **kwargs: Any) -> Any:
    """A drop-in for `client.chat.completions.create(**kwargs)`: the same body fields (`model`,
    `messages`, `tools`, `tool_choice`, `stream`, `stream_options`, …) and request options
    (`timeout`, `extra_headers`, `extra_query`, `extra_body`); returns a `ChatCompletion`, or a
    `Stream[ChatCompletionChunk]` when `stream=True`; raises the SDK's errors."""
    body = {k: v for k, v in kwargs.items() if k not in _OPTIONS}
    if kwargs.get("extra_body"):
        body.update(kwargs["extra_body"])
    options: dict[str, Any] = {"security": {"bearer_auth": True},
                               "headers": {"Content-Type": "application/json", **(kwargs.get("extra_headers") or {})}}
    if "timeout" in kwargs:
        options["timeout"] = kwargs["timeout"]
    if kwargs.get("extra_query"):
        options["params"] = kwargs["extra_query"]
    stream = bool(body.get("stream"))
    return client.post(PATH, content=encode_body(body), options=options,  # type: ignore[call-overload]
                       cast_to=ChatCompletion, stream=stream, stream_cls=openai.Stream[ChatCompletionChunk])


def is_transient(exc: Exception) -> bool:
    if isinstance(exc, (openai.APITimeoutError, openai.APIConnectionError, BadResponse)):
        return True
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code in RETRY_STATUSES or exc.status_code >= 500
    return False
