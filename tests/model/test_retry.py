"""Retry classification and delays. Exceptions are the SDK's own, built on real HTTP objects."""

from __future__ import annotations

import email.utils
import importlib

import openai
import pytest

from runner.model.retry import BadResponse, backoff, refused_parameter, retry_after
from runner.model.transport import is_transient

# This openai build sits on httpx2 rather than httpx; its exceptions need that package's Request/Response.
http = importlib.import_module("httpx2" if hasattr(openai._exceptions, "httpx2") else "httpx")

URL = "http://127.0.0.1:9/v1/chat/completions"


def status_error(status: int, cls: type[openai.APIStatusError] = openai.APIStatusError) -> openai.APIStatusError:
    response = http.Response(status, request=http.Request("POST", URL), json={"error": {"message": "x"}})
    return cls(f"HTTP {status}", response=response, body={"message": "x"})


@pytest.mark.parametrize(
    ("status", "transient"),
    [
        (400, False), (401, False), (403, False), (404, False), (422, False),
        (408, True), (409, True), (425, True), (429, True),
        (500, True), (502, True), (503, True), (504, True), (529, True),
    ],
)
def test_is_transient_by_status(status, transient):
    err = status_error(status)
    assert err.status_code == status
    assert is_transient(err) is transient


@pytest.mark.parametrize(
    ("cls", "status", "transient"),
    [
        (openai.RateLimitError, 429, True),
        (openai.InternalServerError, 500, True),
        (openai.BadRequestError, 400, False),
        (openai.AuthenticationError, 401, False),
        (openai.NotFoundError, 404, False),
    ],
)
def test_is_transient_sdk_subclasses(cls, status, transient):
    assert is_transient(status_error(status, cls)) is transient


def test_connection_errors_are_transient():
    request = http.Request("POST", URL)
    assert is_transient(openai.APIConnectionError(request=request))
    assert is_transient(openai.APITimeoutError(request=request))


def test_a_response_that_is_not_a_completion_is_transient():
    assert is_transient(BadResponse("the response stream was empty"))


@pytest.mark.parametrize(
    ("status", "text", "sent", "expected"),
    [
        (400, "Unrecognized request argument supplied: stream_options", {"stream_options", "tool_choice"},
         "stream_options"),
        (422, "tool_choice: extra fields not permitted", {"tool_choice"}, "tool_choice"),
        (400, "tool_choice is not supported", {"stream_options"}, None),  # not sent: not the cause
        (400, "messages: too long", {"stream_options", "tool_choice"}, None),
        (500, "stream_options", {"stream_options"}, None),
    ],
)
def test_refused_parameter(status, text, sent, expected):
    assert refused_parameter(status, text, sent) == expected


@pytest.mark.parametrize("exc", [ValueError("x"), RuntimeError("boom"), openai.OpenAIError("generic")])
def test_other_errors_are_not_transient(exc):
    assert not is_transient(exc)


NOW = 1_700_000_000.0


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        (None, None),
        ({}, None),
        ({"content-type": "application/json"}, None),
        ({"retry-after": "3"}, 3.0),
        ({"Retry-After": "1.5"}, 1.5),
        ({"retry-after": "-5"}, 0.0),
        ({"retry-after": ""}, None),
        ({"retry-after-ms": "250"}, 0.25),
        ({"Retry-After-Ms": "1500"}, 1.5),
        # Milliseconds are the more precise hint and win over seconds.
        ({"retry-after-ms": "100", "retry-after": "7"}, 0.1),
        # A garbled ms header falls back to the seconds header.
        ({"retry-after-ms": "soon", "retry-after": "2"}, 2.0),
        ({"retry-after": email.utils.formatdate(NOW + 42, usegmt=True)}, 42.0),
        # A date in the past means "now".
        ({"retry-after": email.utils.formatdate(NOW - 600, usegmt=True)}, 0.0),
    ],
)
def test_retry_after(headers, expected):
    assert retry_after(headers, now=NOW) == expected


@pytest.mark.parametrize("value", ["soon", "tomorrow at noon"])
def test_retry_after_garbage_is_none(value):
    assert retry_after({"retry-after": value}, now=NOW) is None


def test_retry_after_from_sdk_response_headers():
    # The caller passes dict(exc.response.headers), which has lower-cased keys.
    response = http.Response(429, request=http.Request("POST", URL), headers={"Retry-After": "4"})
    assert retry_after(dict(response.headers)) == 4.0


@pytest.mark.parametrize(
    ("attempt", "expected"),
    [(1, 0.5), (2, 1.0), (3, 2.0), (4, 4.0), (5, 8.0), (6, 10.0), (20, 10.0)],
)
def test_backoff_exponential_with_cap(attempt, expected):
    assert backoff(attempt, base=0.5, cap=10.0, server_hint=None) == expected


@pytest.mark.parametrize("hint", [0.0, 0.2, 45.0])
def test_backoff_server_hint_wins(hint):
    # Even above the cap: waiting less than asked only earns another 429.
    assert backoff(1, base=1.0, cap=30.0, server_hint=hint) == hint
    assert backoff(10, base=1.0, cap=30.0, server_hint=hint) == hint
