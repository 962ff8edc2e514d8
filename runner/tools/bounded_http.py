"""An httpx transport whose every connect, read and write is bounded by a wall-clock end and the run's Cancel.

httpx's timeouts are per operation: a server that sends its headers a byte at a time never lets a read time out, and
a fetch beside other calls runs on a worker thread, where no signal can stop it. Here each operation gets at most
what is left before the end, a read in slices that ask the Cancel between them, so a fetch ends at its end or at the
run's stop wherever it is (Cancelled: its `why` says which). The network backend is httpcore's own, wrapped: httpx
takes no backend of its own, so the transport's connection pool is made again with it."""

from __future__ import annotations

import ssl
import time
from collections.abc import Iterable
from typing import Any

import httpcore
import httpx

from runner.tools.base import TIME_UP, Cancel, Cancelled

READ_SLICE_S = 0.25  # the longest a read waits before the Cancel is asked again


class Bounded:
    """A fetch's end (time.monotonic()) and the run's Cancel (None: the end alone)."""

    def __init__(self, end: float, cancel: Cancel | None = None) -> None:
        self.end = end
        self.cancel = cancel

    def left(self) -> float:
        """Seconds left; Cancelled when none are, or the run stops."""
        if self.cancel is not None:
            self.cancel.check()
        left = self.end - time.monotonic()
        if left <= 0:
            raise Cancelled(TIME_UP)
        return left

    def timeout(self, timeout: float | None) -> float:
        left = self.left()
        return left if timeout is None else min(timeout, left)


class BoundedTransport(httpx.HTTPTransport):
    def __init__(self, verify: ssl.SSLContext | bool, bound: Bounded) -> None:
        super().__init__(verify=verify, trust_env=False)
        self._pool = httpcore.ConnectionPool(ssl_context=httpx.create_ssl_context(verify=verify, trust_env=False),
                                             network_backend=_Backend(bound))


class _Backend(httpcore.NetworkBackend):
    def __init__(self, bound: Bounded) -> None:
        self.inner = httpcore.SyncBackend()
        self.bound = bound

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Iterable[Any] | None = None) -> httpcore.NetworkStream:
        stream = self.inner.connect_tcp(host, port, self.bound.timeout(timeout), local_address, socket_options)
        return _Stream(stream, self.bound)

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Iterable[Any] | None = None) -> httpcore.NetworkStream:
        return _Stream(self.inner.connect_unix_socket(path, self.bound.timeout(timeout), socket_options), self.bound)

    def sleep(self, seconds: float) -> None:
        self.inner.sleep(min(seconds, self.bound.left()))


class _Stream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream, bound: Bounded) -> None:
        self.inner = inner
        self.bound = bound

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        # A read that times out on a slice has read nothing: it is asked again, until its own timeout.
        until = None if timeout is None else time.monotonic() + timeout
        while True:
            wait = min(self.bound.left(), READ_SLICE_S)
            if until is not None:
                rest = until - time.monotonic()
                if rest <= 0:
                    raise httpcore.ReadTimeout("timed out")
                wait = min(wait, rest)
            try:
                return self.inner.read(max_bytes, wait)
            except httpcore.ReadTimeout:
                if until is not None and time.monotonic() >= until:
                    raise

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self.inner.write(buffer, self.bound.timeout(timeout))

    def close(self) -> None:
        self.inner.close()

    def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
                  timeout: float | None = None) -> httpcore.NetworkStream:
        return _Stream(self.inner.start_tls(ssl_context, server_hostname, self.bound.timeout(timeout)), self.bound)

    def get_extra_info(self, info: str) -> Any:
        return self.inner.get_extra_info(info)
