"""What the loop needs from a model, and the assistant message in the one shape
that is appended to the conversation, recorded, and replayed."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from runner.core.events import Event
from runner.core.jsonutil import canonical, estimate_tokens
from runner.model.surrogates import Mend


@dataclass(frozen=True)
class ModelReply:
    message: dict[str, Any]  # the assistant message exactly as appended to the conversation
    usage: dict[str, int] = field(default_factory=dict)
    finish_reason: str | None = None
    estimated: bool = False  # the server reported no usage: `usage` is the runner's own byte estimate
    replaced: int = 0  # lone UTF-16 surrogates in the server's text, replaced by U+FFFD (model/surrogates.py)


class Stop(Protocol):
    """What a model client sees of its agent's stop (runner/tools/base.py Cancel, which it may not import): whether
    it is asked, and a wait that ends when it is."""

    def stopping(self) -> bool: ...

    def sleep(self, seconds: float) -> bool:
        """Waits `seconds` at most; True as soon as the stop is asked."""
        ...


class ChatModel(Protocol):
    @property
    def name(self) -> str: ...

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, turn: int,
                 emit: Callable[[Event], None], timeout: float | None,
                 tool_choice: str | dict[str, Any] | None = None) -> ModelReply: ...


def assistant_message(content: Any, tool_calls: list[dict[str, Any]], turn: int,
                      mend: Mend | None = None) -> dict[str, Any]:
    """Normalize: fixed keys, ids filled in deterministically when a server omits them, arguments
    always a string (Ollama sends a JSON object: it becomes its canonical JSON), and every text whole
    (a lone UTF-16 surrogate replaced by U+FFFD, counted in `mend`: model/surrogates.py)."""
    mend = mend or Mend()
    message: dict[str, Any] = {"role": "assistant", "content": mend.text(_text(content)) or None}
    if tool_calls:
        message["tool_calls"] = [
            {"id": _whole(c.get("id"), mend) or f"call_{turn}_{i}", "type": "function",
             "function": {"name": mend.text(_text(c.get("name"))),
                          "arguments": mend.json_text(arguments_text(c.get("arguments")))}}
            for i, c in enumerate(tool_calls)
        ]
    return message


def _whole(value: Any, mend: Mend) -> Any:
    return mend.text(value) if isinstance(value, str) else value


def arguments_text(arguments: Any) -> str:
    if arguments is None:
        return ""
    return arguments if isinstance(arguments, str) else canonical(arguments)


def _text(value: Any) -> str:
    """Content as text: a list of parts (`[{"type": "text", "text": …}]`) is joined."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(p.get("text") or "" if isinstance(p, dict) else str(p) for p in value)
    return str(value)


def usage_dict(usage: Any) -> dict[str, int]:
    if usage is None:
        return {"prompt_tokens": 0, "completion_tokens": 0, "cached_tokens": 0}
    details = get_field(usage, "prompt_tokens_details")
    return {
        "prompt_tokens": _int(get_field(usage, "prompt_tokens")),
        "completion_tokens": _int(get_field(usage, "completion_tokens")),
        "cached_tokens": _int(get_field(details, "cached_tokens")) if details else 0,
    }


def reported(usage: dict[str, int]) -> bool:
    """A server that counted nothing reported nothing (some send zeros rather than omit usage)."""
    return bool(usage.get("prompt_tokens") or usage.get("completion_tokens"))


def estimated_usage(messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                    message: dict[str, Any]) -> dict[str, int]:
    """The runner's own count when a server gives none: chars/4 of the prompt and of the reply, which the agent
    restates in its context's count (runner/context/estimate.py `Estimator.counted`: a tokenizer's, when set)."""
    prompt = canonical({"tools": tools, "messages": messages})
    return {"prompt_tokens": estimate_tokens(len(prompt)),
            "completion_tokens": estimate_tokens(len(canonical(message))), "cached_tokens": 0}


def get_field(obj: Any, name: str) -> Any:
    """A field of an SDK object or of a plain dict (servers send shapes the SDK did not model)."""
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)


def _int(value: Any) -> int:
    try:
        return max(0, int(value or 0))
    except (TypeError, ValueError):
        return 0
