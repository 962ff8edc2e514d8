"""A model response's body, bounded by its decoded size, at the HTTP transport.

A server (or a proxy in front of it) can send a small gzip body that inflates to gigabytes: the HTTP
library inflates a whole chunk at once and, for a non-streamed response, keeps all of it. So the
transport under the SDK's client decodes the body itself — gzip and deflate, in steps of at most
`STEP` bytes of output — counts what comes out, and raises `ResponseTooLarge` (a `BadResponse`: retried
like a 5xx) as soon as the count passes the limit. The response the SDK sees has no
`Content-Encoding` left, so nothing above inflates anything again. Only gzip and deflate are asked for
(`Accept-Encoding`); a body in an encoding that was not asked for is a bad response too.
"""

from __future__ import annotations

import functools
import sys
import zlib
from collections.abc import Iterable, Iterator
from typing import Any

import openai

from runner.model.retry import BadResponse

STEP = 64 * 1024  # decoded bytes per step: the most one raw chunk adds to memory before it is counted
ACCEPTED = "gzip, deflate"


class ResponseTooLarge(BadResponse):
    """The decoded body passed `AGENT_RUN_MAX_RESPONSE_BYTES`."""


def _zlib_decoder(encoding: str, first: bytes) -> Any:
    if encoding in ("gzip", "x-gzip"):
        return zlib.decompressobj(16 + zlib.MAX_WBITS)
    # `deflate` is zlib-wrapped by the standard, raw by some servers: the header tells which.
    wrapped = len(first) >= 2 and first[0] & 0x0F == 8 and ((first[0] << 8) | first[1]) % 31 == 0
    return zlib.decompressobj(zlib.MAX_WBITS if wrapped else -zlib.MAX_WBITS)


def _inflate(chunks: Iterable[bytes], encoding: str) -> Iterator[bytes]:
    """One content coding undone, never more than STEP bytes of output from one call."""
    decoder = None
    for chunk in chunks:
        if not chunk:
            continue
        decoder = decoder or _zlib_decoder(encoding, chunk)
        data = chunk
        while data and not decoder.eof:
            try:
                out = decoder.decompress(data, STEP)
            except zlib.error as exc:
                raise BadResponse(f"the response's {encoding} body is corrupt ({exc})") from None
            if out:
                yield out
            data = decoder.unconsumed_tail
    if decoder is not None and not decoder.eof:
        rest = decoder.flush()
        if rest:
            yield rest


def decoded(chunks: Iterable[bytes], content_encoding: str, limit: int) -> Iterator[bytes]:
    """The body with every content coding undone (the last applied, first undone), counted: past `limit`
    decoded bytes, `ResponseTooLarge`."""
    codings = [c.strip().lower() for c in content_encoding.split(",") if c.strip()]
    stream: Iterable[bytes] = chunks
    for coding in reversed(codings):
        if coding == "identity":
            continue
        if coding not in ("gzip", "x-gzip", "deflate"):
            raise BadResponse(f"the response is in content-encoding {coding!r}, which was not asked for")
        stream = _inflate(stream, coding)
    total = 0
    for piece in stream:
        total += len(piece)
        if total > limit:
            raise ResponseTooLarge(f"the response passed {limit} bytes decoded (AGENT_RUN_MAX_RESPONSE_BYTES)")
        yield piece


def bounded_http_client(limit: int) -> Any:
    """The SDK's own HTTP client (its defaults, its HTTP library, proxies from the environment) with every
    transport wrapped so that a response body is decoded and counted there."""
    client = openai.DefaultHttpxClient()
    bounded = _classes(sys.modules[type(client).__mro__[1].__module__.partition(".")[0]])
    client._transport = bounded(client._transport, limit)
    client._mounts = {pattern: bounded(t, limit) if t is not None else None
                      for pattern, t in client._mounts.items()}
    return client


@functools.cache
def _classes(http: Any) -> type:
    """The transport wrapper for the HTTP library the SDK is built on (httpx, or httpx2 in newer SDKs): its
    client checks that a response's stream is its own `SyncByteStream`."""

    class Body(http.SyncByteStream):
        def __init__(self, raw: Any, encoding: str, limit: int) -> None:
            self._raw, self._encoding, self._limit = raw, encoding, limit

        def __iter__(self) -> Iterator[bytes]:
            yield from decoded(self._raw, self._encoding, self._limit)

        def close(self) -> None:
            self._raw.close()

    class Bounded(http.BaseTransport):
        def __init__(self, inner: Any, limit: int) -> None:
            self._inner, self._limit = inner, limit

        def handle_request(self, request: Any) -> Any:
            request.headers["Accept-Encoding"] = ACCEPTED  # only what is inflated here, in bounded steps
            response = self._inner.handle_request(request)
            encoding = response.headers.get("content-encoding", "")
            for name in ("content-encoding", "content-length"):  # the body is handed on decoded
                if name in response.headers and (encoding or name == "content-encoding"):
                    del response.headers[name]
            response.stream = Body(response.stream, encoding, self._limit)
            return response

        def close(self) -> None:
            self._inner.close()

    return Bounded
