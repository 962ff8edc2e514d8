"""The run's one token estimate: a tokenizer's count when one is set (AGENT_RUN_TOKENIZER), else chars/4 scaled by
what the server counted for the first request, else chars/4.

An agent's context manager holds its Estimator; every figure of that agent's context is its: the stages, the
window check, `model_request.estimated_tokens` and the budgets checked before a request (runner/engine/loop.py
passes the context's count on, never re-deriving one).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from runner.context.tokenizer import Count
from runner.core.jsonutil import estimate_tokens

CALIBRATION = 2.0  # a server's prompt_tokens within this factor of the chars/4 estimate calibrates it


@dataclass
class Estimator:
    count: Count | None = None  # a tokenizer (AGENT_RUN_TOKENIZER); None: chars/4
    scale: float | None = None  # the server's tokens per chars/4 token (from its count of the first request)

    def measure(self, text: str) -> int:
        """A text's size in the estimate's unit: its characters, or its tokens under the tokenizer."""
        return len(text) if self.count is None else self.count(text)

    def tokens(self, text: str) -> int:
        """A text's tokens."""
        return self._scaled(self.measure(text))

    def joined(self, sizes: int, parts: int, tools: int) -> int:
        """The tokens of `{"messages":[…],"tools":…}` (canonical) from its `parts` messages' sizes (summed, each
        `measure`d) and its tools array's: under the tokenizer a token a separator; else the exact characters."""
        if self.count is not None:
            return sizes + parts + tools + 6
        # '{"messages":[' m1 ',' m2 … '],"tools":' tools '}'
        return self._scaled(13 + sizes + max(parts - 1, 0) + 10 + tools + 1)

    def calibrate(self, reported: int, estimated: int) -> None:
        """The server's count of a prompt estimated (uncalibrated) at `estimated`: it scales chars/4 from now on when
        it is within CALIBRATION of it (one far off is a server that does not count: a proxy, a fake). Once: the
        caller gives the first response's only, later counts are of prompts pruning has changed."""
        if self.count is None and self.scale is None and estimated > 0 \
                and 1 / CALIBRATION <= reported / estimated <= CALIBRATION:
            self.scale = reported / estimated

    def counted(self, usage: Mapping[str, int], chars: int, estimated: int) -> dict[str, int]:
        """A client's own usage for a server that reported none (chars/4 of the prompt, of `chars` characters, and
        of the reply) in this count, the prompt's being `estimated`: every figure scaled by the two's ratio (a client
        that asked twice summed both requests: its prompt figure is not simply `estimated`)."""
        raw = estimate_tokens(chars)
        if raw <= 0 or estimated == raw:
            return dict(usage)
        return {key: round(value * estimated / raw) for key, value in usage.items()}

    def _scaled(self, size: int) -> int:
        if self.count is not None:
            return size
        estimated = estimate_tokens(size)
        return estimated if self.scale is None else int(estimated * self.scale)
