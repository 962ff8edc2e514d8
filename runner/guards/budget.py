"""Budgets: tokens and cost, checked before every model call so a run never starts a
request it cannot afford. (Turns and wall-clock time are the loop's own limits.)

A server that reports no usage (llama-cpp-python when streaming) is counted with the
runner's own byte estimate, which the model reply carries and the summary labels."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from runner.core.events import Event, ModelFallback, ModelResponse, agent_id
from runner.core.outcome import BudgetExhausted, UsageError
from runner.model.base import ModelReply
from runner.model.catalog import Price, price_for
from runner.model.fallback import Chain

PriceOf = Callable[[str], tuple[Price | None, str | None]]  # runner.model.catalog.price_for with the policy's prices

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


@dataclass(frozen=True)
class Spent:
    """What an auto-resume chain's runs before this one spent (runner/sessions/auto_resume.py): the chain shares the
    first run's budgets, so a resume is checked against the same limits, as one run would be. Turns: the
    conversation's so far (a resume numbers its turns on from it)."""

    turns: int = 0
    tokens: int = 0
    cost_usd: float = 0.0
    requests: int = 0  # every agent's model requests (what --max-turns counts run-wide: subagents' included)


class Budget:
    """`chain`: the run's models (requested, then fallbacks; runner/model/fallback.py): each request is priced, and
    counted in `usage.by_model`, by the model that served it; `price_of` gives a model's price and its source."""

    def __init__(self, max_tokens: int | None, max_cost_usd: float | None, price: Price | None,
                 chain: Chain | None = None, price_of: PriceOf | None = None) -> None:
        self.max_tokens = max_tokens
        self.max_cost_usd = max_cost_usd
        self.price = price  # the requested model's
        self.chain = chain
        self.price_of = price_of
        self.agent_models: dict[str, str] = {}  # a subagent on its profile's model (not the chain's), by agent id
        self.by_model: dict[str, dict[str, Any]] = {}  # model -> its tokens and cost, in the order first used
        if chain is not None:
            self._model(chain.current)
        self.prompt = self.cached = self.completion = 0
        self.estimated = False  # some figures are the runner's estimate, not the server's
        self.warnings: list[str] = []
        self.prices: dict[str, Price | None] = {}  # a subagent on another model: its price, by agent id
        self.costs: dict[str, float] = {}  # by agent id (`main` for the run's own)
        self.carried = Spent()  # never in this run's usage figures: each run's summary counts its own
        # Child agents run at once (--parallel-agents): each request's check reads the figures under it, as each
        # response's usage is added under it.
        self._lock = threading.Lock()

    @classmethod
    def over(cls, models: Sequence[str], max_tokens: int | None, max_cost_usd: float | None, price: Price | None,
             overrides: Mapping[str, Any] | None) -> Budget:
        """The run's budget on its models (the requested one, then the fallbacks), priced with the policy's
        `overrides`: under a cost budget every fallback needs a price too (it may serve the rest of the run)."""
        chain = Chain.of(models[0], models[1:])

        def price_of(name: str) -> tuple[Price | None, str | None]:
            return price_for(name, overrides)

        for name in chain.names[1:] if max_cost_usd is not None else ():
            if price_of(name)[0] is None:
                raise UsageError(f"--max-cost-usd needs a price for fallback model {name}: add it to the policy's "
                                 "budget.prices")
        return cls(max_tokens, max_cost_usd, price, chain, price_of)

    def on_event(self, event: Event) -> None:
        with self._lock:
            self._count(event)

    def _count(self, event: Event) -> None:
        if isinstance(event, ModelResponse):
            prompt = int(event.usage.get("prompt_tokens", 0) or 0)
            cached = int(event.usage.get("cached_tokens", 0) or 0)
            completion = int(event.usage.get("completion_tokens", 0) or 0)
            self.prompt += prompt
            self.cached += cached
            self.completion += completion
            who = agent_id(event)
            price = self.prices.get(who, self.price)
            if self.chain is not None:  # the model that served it (a child's own, or the run's now)
                entry = self._model(self.agent_models.get(who) or self.chain.current)
                price = entry["price"]
                entry["prompt_tokens"] += prompt
                entry["completion_tokens"] += completion
                if price is not None:
                    entry["cost_usd"] += price.cost(prompt, cached, completion)
            if price is not None:
                self.costs[who] = self.costs.get(who, 0.0) + price.cost(prompt, cached, completion)
        elif isinstance(event, ModelFallback) and self.chain is not None:
            if agent_id(event) in self.agent_models:  # a child on its own model fell back: it stays on the new one
                self.agent_models[agent_id(event)] = event.to_model
            self._model(event.to_model)

    def _model(self, name: str) -> dict[str, Any]:
        """The model's usage entry (made, priced, when first used)."""
        if name not in self.by_model:
            price, source = self.price_of(name) if self.price_of is not None else (None, None)
            self.by_model[name] = {"prompt_tokens": 0, "completion_tokens": 0, "cost_usd": 0.0, "price": price,
                                   "price_source": source}
        return self.by_model[name]

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
        if self.chain is None:
            return
        data["models_used"] = list(self.by_model)
        data["usage"]["by_model"] = {
            name: {"prompt_tokens": e["prompt_tokens"], "completion_tokens": e["completion_tokens"],
                   "cost_usd": round(e["cost_usd"], 6) if e["price"] is not None else None,
                   "price_source": e["price_source"]}
            for name, e in self.by_model.items()}
        for f in self.chain.fallbacks:
            data["warnings"].append(f"model {f['from']} failed at turn {f['turn']}; the run went on with {f['to']}, "
                                    "which had not seen the conversation: the prompt (prefix) cache started over")

    @property
    def all_priced(self) -> bool:
        """Every model that served a request has a price (else a total cost would leave some out)."""
        return all(e["price"] is not None for e in self.by_model.values()
                   if e["prompt_tokens"] or e["completion_tokens"])

    @property
    def tokens(self) -> int:
        return self.prompt + self.completion

    @property
    def cost_usd(self) -> float:
        return sum(self.costs.values())

    def carry(self, spent: Spent) -> None:
        """What the chain's earlier runs spent: the limits are the chain's, not this run's alone."""
        self.carried = spent

    def before_request(self, estimated_prompt_tokens: int) -> None:
        """Raise if the next request (its prompt, estimated) would pass a budget."""
        with self._lock:
            self._check(estimated_prompt_tokens)

    def _check(self, estimated_prompt_tokens: int) -> None:
        tokens, cost = self.tokens + self.carried.tokens, self.cost_usd + self.carried.cost_usd
        if self.max_tokens is not None and tokens + estimated_prompt_tokens > self.max_tokens:
            raise BudgetExhausted(
                f"token budget: {tokens} used{self._carried()} + ~{estimated_prompt_tokens} for the next request "
                f"> --max-tokens {self.max_tokens}",
                budget={"name": "max_tokens", "limit": self.max_tokens, "used": tokens,
                        "next_request_estimate": estimated_prompt_tokens})
        price = self._model(self.chain.current)["price"] if self.chain is not None else self.price
        if self.max_cost_usd is not None and price is not None:
            # Priced as if nothing of the next prompt were cached, on the model the run is on: the dearest case.
            next_cost = estimated_prompt_tokens * price.at(estimated_prompt_tokens).input / 1_000_000
            if cost + next_cost > self.max_cost_usd:
                raise BudgetExhausted(
                    f"cost budget: ${cost:.4f} spent{self._carried()} + ~${next_cost:.4f} for the next request "
                    f"> --max-cost-usd {self.max_cost_usd}",
                    budget={"name": "max_cost_usd", "limit": self.max_cost_usd, "used": round(cost, 6),
                            "next_request_estimate": round(next_cost, 6)})

    def _carried(self) -> str:
        return " (the auto-resume chain's runs included)" if self.carried != Spent() else ""
