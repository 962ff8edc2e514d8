"""Budgets: tokens and cost, checked before every model call so a run never starts a
request it cannot afford. (Turns and wall-clock time are the loop's own limits.)"""

from __future__ import annotations

from runner.events import Event, ModelResponse
from runner.model.catalog import Price
from runner.outcome import BudgetExhausted


class Budget:
    def __init__(self, max_tokens: int | None, max_cost_usd: float | None, price: Price | None) -> None:
        self.max_tokens = max_tokens
        self.max_cost_usd = max_cost_usd
        self.price = price
        self.prompt = self.cached = self.completion = 0

    def on_event(self, event: Event) -> None:
        if isinstance(event, ModelResponse):
            self.prompt += int(event.usage.get("prompt_tokens", 0) or 0)
            self.cached += int(event.usage.get("cached_tokens", 0) or 0)
            self.completion += int(event.usage.get("completion_tokens", 0) or 0)

    @property
    def tokens(self) -> int:
        return self.prompt + self.completion

    @property
    def cost_usd(self) -> float:
        return self.price.cost(self.prompt, self.cached, self.completion) if self.price else 0.0

    def before_request(self, estimated_prompt_tokens: int) -> None:
        """Raise if the next request (its prompt, estimated) would pass a budget."""
        if self.max_tokens is not None and self.tokens + estimated_prompt_tokens > self.max_tokens:
            raise BudgetExhausted(
                f"token budget: {self.tokens} used + ~{estimated_prompt_tokens} for the next request "
                f"> --max-tokens {self.max_tokens}",
                budget={"name": "max_tokens", "limit": self.max_tokens, "used": self.tokens,
                        "next_request_estimate": estimated_prompt_tokens})
        if self.max_cost_usd is not None and self.price is not None:
            # Priced as if nothing of the next prompt were cached: the dearest case.
            next_cost = estimated_prompt_tokens * self.price.input / 1_000_000
            if self.cost_usd + next_cost > self.max_cost_usd:
                raise BudgetExhausted(
                    f"cost budget: ${self.cost_usd:.4f} spent + ~${next_cost:.4f} for the next request "
                    f"> --max-cost-usd {self.max_cost_usd}",
                    budget={"name": "max_cost_usd", "limit": self.max_cost_usd, "used": round(self.cost_usd, 6),
                            "next_request_estimate": round(next_cost, 6)})
