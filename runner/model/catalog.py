"""What the runner knows about models: context windows and prices (USD per 1M tokens).

Used by the budget guard and the context floor. A policy extends prices with
`budget.prices`; `--context-window` / `compaction.contextWindow` override the
window. Names match exactly, else by the longest known prefix
(`gpt-4o-mini-2024-07-18` is `gpt-4o-mini`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Price:
    input: float
    cached_input: float
    output: float

    def cost(self, prompt: int, cached: int, completion: int) -> float:
        uncached = max(0, prompt - cached)
        return (uncached * self.input + cached * self.cached_input + completion * self.output) / 1_000_000


WINDOWS: dict[str, int] = {
    "gpt-4o": 128_000, "gpt-4o-mini": 128_000, "gpt-4.1": 1_047_576, "gpt-4.1-mini": 1_047_576,
    "gpt-4.1-nano": 1_047_576, "o3": 200_000, "o3-mini": 200_000, "o4-mini": 200_000, "gpt-5": 400_000,
    "gpt-5-mini": 400_000, "gpt-5-nano": 400_000, "gpt-3.5-turbo": 16_385, "gpt-4": 8_192,
}

PRICES: dict[str, Price] = {
    "gpt-4o": Price(2.50, 1.25, 10.00), "gpt-4o-mini": Price(0.15, 0.075, 0.60),
    "gpt-4.1": Price(2.00, 0.50, 8.00), "gpt-4.1-mini": Price(0.40, 0.10, 1.60),
    "gpt-4.1-nano": Price(0.10, 0.025, 0.40), "o3": Price(2.00, 0.50, 8.00), "o4-mini": Price(1.10, 0.275, 4.40),
    "gpt-5": Price(1.25, 0.125, 10.00), "gpt-5-mini": Price(0.25, 0.025, 2.00), "gpt-5-nano": Price(0.05, 0.005, 0.40),
}


def lookup(table: dict[str, Any], model: str) -> Any:
    if model in table:
        return table[model]
    prefixes = [k for k in table if model.startswith(k + "-")]
    return table[max(prefixes, key=len)] if prefixes else None


def price_for(model: str, overrides: Mapping[str, Any] | None = None) -> tuple[Price | None, str | None]:
    """The model's price and where it came from — the one place the rest of the runner asks.

    Policy-given prices (`budget.prices`: `{"input": …, "cachedInput": …, "output": …}`) win
    (source "policy"); else the built-in table; `(None, None)` when no price is known."""
    p = (overrides or {}).get(model)
    if p is not None:
        return Price(p["input"], p.get("cachedInput", p["input"]), p["output"]), "policy"
    known = lookup(PRICES, model)
    return (known, "agent-run table") if known is not None else (None, None)


def window_for(model: str, override: int | None = None) -> int | None:
    return override or lookup(WINDOWS, model)
