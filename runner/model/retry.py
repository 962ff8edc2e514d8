"""Which model failures are retried, and how long to wait. Pure functions, without the openai SDK: which of its
errors are transient is `transport.is_transient`."""

from __future__ import annotations

import email.utils
import time

from runner.core.outcome import ModelError

RETRY_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
# Optional request parameters some servers reject: sent again without the one a 400/422 names.
REFUSABLE = ("stream_options", "tool_choice", "temperature", "top_p", "max_completion_tokens", "max_tokens", "seed",
             "reasoning_effort")


class BadResponse(Exception):
    """A response that is not a usable chat completion: a 200 with an HTML page or truncated JSON,
    a choice without a message, a stream that ends before its finish_reason. Retried like a 5xx."""


class ProviderDown(ModelError):
    """The model's server is down for now: a request's retries ran out on a server error, a timeout, a dropped
    connection or an overload (a 5xx, 429, a bad response; or a Retry-After past the ceiling). Never an auth
    (401/403) or bad-request (400/404/422) error: another model on the same endpoint and key would fail the
    same way. A run with --fallback-model goes on with the next model (runner/model/fallback.py); else exit 6, summary
    `cause: provider_down` (one `--auto-resume` resumes)."""

    def __init__(self, reason: str, **details: object) -> None:
        super().__init__(reason, **{"cause": "provider_down", **details})


def refused_parameter(status: int, error_text: str, sent: set[str]) -> str | None:
    """The optional parameter a 400/422 blames (`Unrecognized request argument supplied:
    stream_options`, `tool_choice is not supported`): sent without it, the request may pass."""
    if status not in (400, 422):
        return None
    return next((p for p in REFUSABLE if p in sent and p in error_text), None)


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
