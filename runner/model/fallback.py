"""The fallback model: a provider outage is not the end of the job.

When a request's retries run out on a server error, timeout or overload (`ProviderDown`; never an auth or
bad-request error), the run goes on with the next model of `--fallback-model` (same endpoint and key), and
stays on it. The `Chain` is the run's: its own agent and the children on its model share it, so a fallback
in a child moves the run too, and a child started after a fallback starts on the model the run is on.
The new model has never seen the conversation: the server's prompt (prefix) cache starts over, which the
`model_fallback` event and the summary say.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from runner.core.events import Event, ModelFallback
from runner.model.base import ChatModel, ModelReply
from runner.model.retry import ProviderDown


@dataclass
class Chain:
    """The run's models in order of preference: the requested one, then each fallback. `at` is the one in use."""

    names: tuple[str, ...]
    at: int = 0
    # Each fallback as it happened: {turn, from, to, reason} (for the summary's warning)
    fallbacks: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def of(cls, model: str, fallbacks: Sequence[str] = ()) -> Chain:
        """The requested model first; a fallback named twice, or the requested one again, is tried once."""
        return cls(tuple(dict.fromkeys([model, *fallbacks])))

    @property
    def current(self) -> str:
        return self.names[self.at]

    @property
    def used(self) -> tuple[str, ...]:
        """The models the run has been on, in order."""
        return self.names[: self.at + 1]

    def after(self, failed: str) -> str | None:
        """The model to go on with now that `failed` is down: the next one, or the one in use if another agent
        of the run fell back already; None when no model is left."""
        if self.current != failed:
            return self.current
        if self.at + 1 >= len(self.names):
            return None
        self.at += 1
        return self.current


class FallbackChat:
    """A ChatModel on the chain's current model; on `ProviderDown` it emits `model_fallback` and asks the next
    model the same request (the same messages and tools: nothing is re-serialized)."""

    def __init__(self, chain: Chain, build: Callable[[str], ChatModel],
                 on_delta: Callable[[int, str | None], None] | None = None) -> None:
        self.chain = chain
        self._build = build
        self._on_delta = on_delta
        self._client = build(chain.current)

    @property
    def name(self) -> str:
        return self.chain.current

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, turn: int,
                 emit: Callable[[Event], None], timeout: float | None = None,
                 tool_choice: str | dict[str, Any] | None = None) -> ModelReply:
        while True:
            if self._client.name != self.chain.current:  # another agent of the run fell back meanwhile
                self._client = self._build(self.chain.current)
            try:
                return self._client.complete(messages, tools, turn=turn, emit=emit, timeout=timeout,
                                             tool_choice=tool_choice)
            except ProviderDown as exc:
                failed = self._client.name
                to = self.chain.after(failed)
                if to is None:
                    raise
                self._fell_back(turn, failed, to, exc.reason, emit)

    def _fell_back(self, turn: int, failed: str, to: str, why: str, emit: Callable[[Event], None]) -> None:
        if self._on_delta is not None and getattr(self._client, "showed_text", False):
            self._on_delta(turn, None)  # the failed model's streamed text: the consumer drops it
        reason = f"{why}; {to} has not seen this conversation: the prompt cache starts over"
        self.chain.fallbacks.append({"turn": turn, "from": failed, "to": to, "reason": reason})
        emit(ModelFallback(turn=turn, from_model=failed, to_model=to, reason=reason))
