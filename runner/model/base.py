"""What the loop needs from a model, and the assistant message in the one shape
that is appended to the conversation, recorded, and replayed."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from runner.events import Event


@dataclass(frozen=True)
class ModelReply:
    message: dict[str, Any]  # the assistant message exactly as appended to the conversation
    usage: dict[str, int] = field(default_factory=dict)
    finish_reason: str | None = None


class ChatModel(Protocol):
    name: str

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, turn: int,
                 emit: Callable[[Event], None], timeout: float | None,
                 tool_choice: str | None = None) -> ModelReply: ...


def assistant_message(content: str | None, tool_calls: list[dict[str, Any]], turn: int) -> dict[str, Any]:
    """Normalize: fixed keys, ids filled in deterministically when a server omits them."""
    message: dict[str, Any] = {"role": "assistant", "content": content or None}
    if tool_calls:
        message["tool_calls"] = [
            {"id": c.get("id") or f"call_{turn}_{i}", "type": "function",
             "function": {"name": c.get("name") or "", "arguments": c.get("arguments") or ""}}
            for i, c in enumerate(tool_calls)
        ]
    return message


def usage_dict(usage: Any) -> dict[str, int]:
    if usage is None:
        return {"prompt_tokens": 0, "completion_tokens": 0, "cached_tokens": 0}
    details = getattr(usage, "prompt_tokens_details", None)
    return {
        "prompt_tokens": int(getattr(usage, "prompt_tokens", 0) or 0),
        "completion_tokens": int(getattr(usage, "completion_tokens", 0) or 0),
        "cached_tokens": int(getattr(details, "cached_tokens", 0) or 0) if details else 0,
    }
