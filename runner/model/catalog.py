"""What the runner knows about models: context windows and prices (USD per 1M tokens).

Used by the budget guard and the context floor. The data is genai-prices' (pydantic's
maintained database of model prices and context windows), as shipped in the installed
package: prices age with every change a provider makes, and a hand-kept table aged with
them. Its online update is never started: a run's pricing is the package's, offline and
reproducible. The policy's `budget.prices` overrides it; `--context-window` /
`compaction.contextWindow` override the window.

genai-prices is imported on the first lookup only (its data is ~1.5 MB of Python:
~40 ms on top of the runner's own imports, which a run that needs no price or window
does not pay). A model it does not know has no price (a cost budget then needs
`budget.prices`) and no window (the context manager's character fallback applies).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from functools import cache
from typing import Any

POLICY = "policy"


@dataclass(frozen=True)
class Tier:
    """From `start` prompt tokens up, a request's every token is billed at these rates (the
    providers' long-context pricing: crossing the line reprices the whole request)."""

    start: int
    input: float
    cached_input: float
    output: float


@dataclass(frozen=True)
class Price:
    input: float
    cached_input: float
    output: float
    tiers: tuple[Tier, ...] = ()  # ascending by start

    def at(self, prompt: int) -> Price:
        """The flat rates a request of `prompt` tokens is billed at."""
        for tier in reversed(self.tiers):
            if prompt > tier.start:
                return Price(tier.input, tier.cached_input, tier.output)
        return replace(self, tiers=()) if self.tiers else self

    def cost(self, prompt: int, cached: int, completion: int) -> float:
        rates = self.at(prompt)
        uncached = max(0, prompt - cached)
        return (uncached * rates.input + cached * rates.cached_input + completion * rates.output) / 1_000_000


def price_for(model: str, overrides: Mapping[str, Any] | None = None) -> tuple[Price | None, str | None]:
    """The model's price and where it came from — the one place the rest of the runner asks.

    Policy-given prices (`budget.prices`: `{"input": …, "cachedInput": …, "output": …}`) win
    (source "policy"); else genai-prices' (source "genai-prices <version>"); `(None, None)`
    when neither knows the model."""
    p = (overrides or {}).get(model)
    if p is not None:
        return Price(p["input"], p.get("cachedInput", p["input"]), p["output"]), POLICY
    found = _lookup(model)
    if found is None:
        return None, None
    price = _price(found.get_prices(datetime.now(UTC)))
    return (price, _source()) if price is not None else (None, None)


def window_for(model: str, override: int | None = None) -> int | None:
    if override:
        return override
    found = _lookup(model)
    return found.context_window if found is not None else None


@cache
def _lookup(model: str) -> Any:
    """genai-prices' model entry for `model`, or None. Its own matching takes dated names
    (`gpt-4o-mini-2024-07-18`) and aliases; a `vendor/model` name (OpenRouter, LiteLLM)
    is looked up as the vendor's model."""
    snapshot = _bundled()
    attempts: list[str | None] = [None, "litellm"] if "/" in model else [None]
    for provider_id in attempts:  # "litellm" is genai-prices' own rule for splitting `vendor/`
        try:
            return snapshot.find_provider_model(model, None, provider_id, None)[1]
        except LookupError:
            continue
    return None


@cache
def _bundled() -> Any:
    """The data shipped in the installed package, never a fetched one (an UpdatePrices task, if
    anything in the process started one, would swap genai-prices' default snapshot)."""
    from genai_prices.data import providers
    from genai_prices.data_snapshot import DataSnapshot

    return DataSnapshot(providers=providers, from_auto_update=False)


@cache
def _source() -> str:
    from importlib.metadata import version

    return f"genai-prices {version('genai-prices')}"


def _price(prices: Any) -> Price | None:
    """genai-prices' ModelPrice (Decimal per 1M tokens, a key tiered or not) as a Price; None
    without token prices. No cached-input price means cached tokens cost as much as the others."""
    if prices.input_mtok is None or prices.output_mtok is None:
        return None
    keys = {"input": prices.input_mtok, "cached_input": prices.cache_read_mtok or prices.input_mtok,
            "output": prices.output_mtok}
    starts = sorted({t.start for v in keys.values() for t in getattr(v, "tiers", ())})
    base = {k: float(getattr(v, "base", v)) for k, v in keys.items()}
    tiers = tuple(Tier(s, **{k: _rate(v, s) for k, v in keys.items()}) for s in starts)
    return Price(**base, tiers=tiers)


def _rate(value: Any, start: int) -> float:
    """The rate of one key for a request just over `start` prompt tokens (genai-prices' rule)."""
    for tier in reversed(getattr(value, "tiers", ())):
        if start + 1 > tier.start:
            return float(tier.price)
    return float(getattr(value, "base", value))
