"""Which model failures are transient, and how long to wait. Pure functions."""

from __future__ import annotations

import email.utils
import time

import openai

RETRY_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504})


def is_transient(exc: Exception) -> bool:
    if isinstance(exc, (openai.APITimeoutError, openai.APIConnectionError)):
        return True
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code in RETRY_STATUSES or exc.status_code >= 500
    return False


def retry_after(headers: dict[str, str] | None, now: float | None = None) -> float | None:
    """Seconds the server asked us to wait (`retry-after-ms`, `retry-after` seconds or HTTP date)."""
    if not headers:
        return None
    lower = {k.lower(): v for k, v in headers.items()}
    if "retry-after-ms" in lower:
        try:
            return max(0.0, float(lower["retry-after-ms"]) / 1000)
        except ValueError:
            pass
    value = lower.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        try:
            parsed = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        return max(0.0, parsed.timestamp() - (now if now is not None else time.time()))


def backoff(attempt: int, base: float, cap: float, server_hint: float | None) -> float:
    """Exponential (base · 2^(attempt-1)), capped; a server's Retry-After wins.

    The caller bounds the wait by the run's remaining time, not by the cap: waiting
    less than the server asked only earns another 429."""
    if server_hint is not None:
        return server_hint
    return min(base * (2 ** (attempt - 1)), cap)
