"""Budgets: tokens and cost, checked before every model call so a run never starts a
request it cannot afford. (Turns and wall-clock time are the loop's own limits.)

A server that reports no usage (llama-cpp-python when streaming) is counted with the
runner's own byte estimate, which the model reply carries and the summary labels."""

from __future__ import annotations

from typing import Any

from runner.core.events import Event, ModelResponse, agent_id
from runner.core.outcome import BudgetExhausted
from runner.model.base import ModelReply
from runner.model.catalog import Price

# A server that counts under a third of the runner's estimate did not see the whole prompt: it
# dropped the tools or truncated the messages. Only for prompts big enough to judge.
DROPPED_RATIO = 3
DROPPED_MIN_ESTIMATE = 1000


def dropped_prompt(reported_prompt: int, estimated_prompt: int) -> str | None:
    if estimated_prompt <= DROPPED_MIN_ESTIMATE or reported_prompt * DROPPED_RATIO >= estimated_prompt:
        return None
    return (f"the server reported {reported_prompt} prompt tokens for a prompt the runner estimates at "
            f"~{estimated_prompt}: it probably dropped the tools or truncated the prompt (check its context size "
            "and function-calling support)")


class Budget:
    def __init__(self, max_tokens: int | None, max_cost_usd: float | None, price: Price | None) -> None:
        self.max_tokens = max_tokens
        self.max_cost_usd = max_cost_usd
        self.price = price
        self.prompt = self.cached = self.completion = 0
        self.estimated = False  # some figures are the runner's estimate, not the server's
        self.warnings: list[str] = []
        self.prices: dict[str, Price | None] = {}  # a subagent on another model: its price, by agent id
        self.costs: dict[str, float] = {}  # by agent id (`main` for the run's own)

    def on_event(self, event: Event) -> None:
        if isinstance(event, ModelResponse):
            prompt = int(event.usage.get("prompt_tokens", 0) or 0)
            cached = int(event.usage.get("cached_tokens", 0) or 0)
            completion = int(event.usage.get("completion_tokens", 0) or 0)
            self.prompt += prompt
            self.cached += cached
            self.completion += completion
            who = agent_id(event)
            price = self.prices.get(who, self.price)
            if price is not None:
                self.costs[who] = self.costs.get(who, 0.0) + price.cost(prompt, cached, completion)

    def on_reply(self, reply: ModelReply, estimated_prompt: int) -> None:
        if reply.estimated:
            self.estimated = True
            return
        warning = dropped_prompt(int(reply.usage.get("prompt_tokens", 0) or 0), estimated_prompt)
        if warning is not None and not self.warnings:  # once: every later turn would say the same
            self.warnings.append(warning)

    def figures(self, data: dict[str, Any]) -> None:
        """What the budget adds to summary.json: the estimate label and its warnings."""
        if self.estimated:
            data["usage"]["estimated"] = True
        data.setdefault("warnings", []).extend(self.warnings)

    @property
    def tokens(self) -> int:
        return self.prompt + self.completion

    @property
    def cost_usd(self) -> float:
        return sum(self.costs.values())

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
            next_cost = estimated_prompt_tokens * self.price.at(estimated_prompt_tokens).input / 1_000_000
            if self.cost_usd + next_cost > self.max_cost_usd:
                raise BudgetExhausted(
                    f"cost budget: ${self.cost_usd:.4f} spent + ~${next_cost:.4f} for the next request "
                    f"> --max-cost-usd {self.max_cost_usd}",
                    budget={"name": "max_cost_usd", "limit": self.max_cost_usd, "used": round(self.cost_usd, 6),
                            "next_request_estimate": round(next_cost, 6)})
