"""A run's token and cost budgets and its context-window floor, checked before any request (runner/guards/budget.py
counts; this wires it into a run and says where a too-small window came from)."""

from __future__ import annotations

import os
import sys
from typing import Any

from runner.core.outcome import UsageError
from runner.engine.recorder import Recording
from runner.engine.settings import Settings
from runner.guards.budget import Budget
from runner.model.catalog import price_for, window_for
from runner.policy.model import Policy

MIN_CONTEXT_WINDOW = 16_384
WARN_CONTEXT_WINDOW = 32_768


def budget_for(rec: Recording, policy: Policy, settings: Settings, cli: dict[str, Any] | None = None) -> Budget:
    """Token and cost budgets, and the context floor: refused before any request. `cli` (the flags
    given) lets the warning say where the context window came from."""
    replaying = settings.model.startswith("replay:")
    window = None if replaying else window_for(settings.model, settings.context_window)
    if window is not None and window < MIN_CONTEXT_WINDOW:
        raise UsageError(f"model {settings.model} has a {window}-token context window (from "
                         f"{window_source(settings, policy, cli or {})}); agent-run needs at least "
                         f"{MIN_CONTEXT_WINDOW} (override with --context-window if that is wrong)")
    if window is not None and window < WARN_CONTEXT_WINDOW:
        print(f"agent-run: warning: {settings.model} has a small context window ({window} tokens, from "
              f"{window_source(settings, policy, cli or {})}); long tasks may not fit", file=sys.stderr)
    price, source = price_for(settings.model, policy.sections.get("budget", {}).get("prices"))
    if settings.max_cost_usd is not None and price is None and not replaying:
        raise UsageError(f"--max-cost-usd needs a price for model {settings.model}: add it to the policy's "
                         "budget.prices")
    budget = Budget.over([settings.model, *([] if replaying else settings.fallback_models)], settings.max_tokens,
                         settings.max_cost_usd, price, policy.sections.get("budget", {}).get("prices"))
    rec.lifecycle.on_event(budget.on_event)

    def figures(data: dict[str, Any]) -> None:
        data["usage"]["total_tokens"] = budget.tokens
        data["usage"]["cost_usd"] = round(budget.cost_usd, 6) if price and budget.all_priced else None
        data["usage"]["price_source"] = source  # "policy", "genai-prices <version>", or None: no price
        budget.figures(data)

    rec.lifecycle.on_summary(figures)
    return budget


def window_source(settings: Settings, policy: Policy, cli: dict[str, Any]) -> str:
    """Where the context window in use was set, as a person would look for it."""
    if settings.context_window is None:
        return "genai-prices' model database"
    if cli.get("context_window") is not None:
        return "--context-window"
    if any(name.upper() == "AGENT_RUN_CONTEXT_WINDOW" for name in os.environ):
        return "AGENT_RUN_CONTEXT_WINDOW"
    if policy.sections.get("compaction", {}).get("contextWindow") == settings.context_window:
        return f"the policy's compaction.contextWindow ({policy.path})"
    return "the task's front matter or an --env-file"
