"""A base URL's credentials, kept out of what a run says about its endpoint.

A base URL may carry a token: `https://user:TOKEN@host/v1`, `https://TOKEN@host/v1`, `…/v1?key=TOKEN`
(gateways and proxies take keys so). The run's messages name the endpoint they could not reach, and a
library's error text may quote the URL: every message the model client makes is passed through
`scrub`, which puts `[REDACTED:base-url]` where any of those parts stood, however it is spelled. Pure.
"""

from __future__ import annotations

from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit, urlunsplit

MARK = "[REDACTED:base-url]"
# Shorter parts (`?v=1`, a user `bob`) are replaced only inside the URL itself (`display_url`): elsewhere in a
# text, replacing them would garble it.
MIN_CHARS = 6


def url_secrets(url: str | None) -> list[str]:
    """The parts of `url` that may be credentials (user, password, query values), as written and
    percent-decoded, longest first."""
    if not url:
        return []
    try:
        parts = urlsplit(url)
        values = [parts.username, parts.password, *(v for _, v in parse_qsl(parts.query, keep_blank_values=True))]
    except ValueError:  # not a URL the SDK could use either: all of it is hidden
        return [url]
    found: set[str] = set()
    for value in values:
        if value is None:
            continue
        for form in (value, unquote(value), quote(unquote(value), safe="")):
            if len(form) >= MIN_CHARS:
                found.add(form)
    return sorted(found, key=len, reverse=True)


def display_url(url: str) -> str:
    """`url` with its user, password and query values replaced by the mark, whatever their length."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        if ":" in host:  # an IPv6 address keeps its brackets
            host = f"[{host}]"
        if parts.port is not None:
            host = f"{host}:{parts.port}"
        if parts.username is not None or parts.password is not None:
            host = f"{MARK}@{host}"
        query = urlencode([(k, MARK) for k, _ in parse_qsl(parts.query, keep_blank_values=True)], safe="[]:")
        return urlunsplit((parts.scheme, host, parts.path, query, ""))
    except ValueError:
        return MARK


def scrub(text: str, secrets: list[str]) -> str:
    for secret in secrets:
        text = text.replace(secret, MARK)
    return text
