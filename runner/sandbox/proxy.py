"""The egress proxy: the only way out of a sandbox whose network is an allow-list.

It listens on a Unix socket the runner owns (bridged into the sandbox's own network
namespace, which has nothing but loopback). Each connection is one `CONNECT host:port`
or one plain-HTTP request with an absolute URI; `decide(host, port)` says whether it
may go out, and the proxy then connects to that host and port and nothing else for
the rest of the connection. A name allowed only by a wildcard must not resolve to a
private or loopback address (DNS rebinding); a host named exactly may; a link-local one never.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import os
import selectors
import socket
import socketserver
import threading
from collections.abc import Callable
from urllib.parse import urlsplit

# Verdict and the address check are web_fetch's too (runner/policy/egress.py, runner/tools/ssrf.py):
# a command's connection and an in-process fetch are decided and pinned the same way.
from runner.policy.egress import Verdict
from runner.tools.ssrf import AddressRefused, UnresolvableHost, resolve_and_check

MAX_HEAD = 64 * 1024
CONNECT_TIMEOUT_S = 15.0


Decide = Callable[[str, int], Verdict]


class EgressProxy:
    """`decide` decides a connection that names no caller; `callers` (token -> decider) one whose
    Proxy-Authorization names a process the runner started (Sandbox.calling): several agents' commands may run at
    once, and each connection is decided under the policy of, and recorded under, the call that made it."""

    def __init__(self, socket_path: str, decide: Decide) -> None:
        self.socket_path = socket_path
        self.decide = decide
        self.callers: dict[str, Decide] = {}
        proxy = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                proxy._serve(self.request)

        class Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
            daemon_threads = True

        with contextlib.suppress(FileNotFoundError):
            os.unlink(socket_path)
        self.server = Server(socket_path, Handler)
        self._thread = threading.Thread(target=self.server.serve_forever, name="egress-proxy", daemon=True)

    def start(self) -> EgressProxy:
        self._thread.start()
        return self

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.socket_path)

    def _serve(self, client: socket.socket) -> None:
        client.settimeout(30)
        try:
            head, rest = _read_head(client)
            method, target, version, lines = _parse_head(head)
            if method == "CONNECT":
                host, port = _split_hostport(target, 443)
                forward = b""
            else:
                url = urlsplit(target)
                if url.scheme != "http" or not url.hostname:
                    raise ValueError("only CONNECT and absolute http:// requests go through this proxy")
                host, port = url.hostname, url.port or 80
                origin = (url.path or "/") + (f"?{url.query}" if url.query else "")
                kept = [ln for ln in lines if not ln.lower().startswith((b"proxy-", b"connection:"))]
                forward = b"\r\n".join([f"{method} {origin} {version}".encode(), *kept, b"Connection: close",
                                         b"", b""])
        except (OSError, ValueError) as exc:  # a bad port or bracket raises ValueError in urlsplit too
            _refuse(client, 400, f"bad proxy request: {exc}")
            return
        verdict = self.callers.get(_token(lines) or "", self.decide)(host, port)
        if not verdict.allowed:
            _refuse(client, 403, f"agent-run: network access to {host}:{port} is denied by the policy "
                                 f"({verdict.reason or 'not in sandbox.network.allow'})")
            return
        try:
            addresses = resolve_and_check(host, port, allow_private=verdict.exact)
            upstream = _connect(addresses, port)
        except (AddressRefused, UnresolvableHost, OSError) as exc:
            _refuse(client, 502, f"agent-run: cannot connect to {host}:{port}: {exc}")
            return
        with upstream:
            if method == "CONNECT":
                client.sendall(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            upstream.sendall(forward + rest)
            _pipe(client, upstream)


def _token(lines: list[bytes]) -> str | None:
    """The password of a `Proxy-Authorization: Basic` header: the token Sandbox.calling put in the process's proxy
    URL (curl, git, pip, urllib send it from `http://user:token@host:port`). Anything else: no caller named."""
    for line in lines:
        name, _, value = line.partition(b":")
        if name.strip().lower() != b"proxy-authorization":
            continue
        scheme, _, encoded = value.strip().partition(b" ")
        if scheme.lower() != b"basic":
            return None
        with contextlib.suppress(ValueError, binascii.Error):
            return base64.b64decode(encoded.strip(), validate=True).decode("latin-1").partition(":")[2] or None
    return None


def _read_head(sock: socket.socket) -> tuple[bytes, bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise ValueError("connection closed before the request head ended")
        data += chunk
        if len(data) > MAX_HEAD:
            raise ValueError("request head too large")
    head, _, rest = data.partition(b"\r\n\r\n")
    return head, rest


def _parse_head(head: bytes) -> tuple[str, str, str, list[bytes]]:
    first, *lines = head.split(b"\r\n")
    parts = first.decode("latin-1").split(" ")
    if len(parts) != 3:
        raise ValueError(f"malformed request line {first[:100]!r}")
    return parts[0].upper(), parts[1], parts[2], lines


def _split_hostport(text: str, default: int) -> tuple[str, int]:
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
    else:
        host, _, port = text.rpartition(":") if ":" in text else (text, "", "")
    if not port.isdigit() or not 0 < int(port) < 65536:
        if port:
            raise ValueError(f"bad port in {text!r}")
        return host.lower(), default
    return host.lower(), int(port)


def _connect(addresses: list[str], port: int) -> socket.socket:
    last: OSError | None = None
    for address in addresses:
        try:
            return socket.create_connection((address, port), timeout=CONNECT_TIMEOUT_S)
        except OSError as exc:
            last = exc
    raise last or OSError("no address")


def _refuse(client: socket.socket, status: int, message: str) -> None:
    reason = {400: "Bad Request", 403: "Forbidden", 502: "Bad Gateway"}[status]
    body = (message + "\n").encode()
    with contextlib.suppress(OSError):
        client.sendall(f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain\r\nContent-Length: {len(body)}\r\n"
                       "Connection: close\r\n\r\n".encode() + body)


def _pipe(a: socket.socket, b: socket.socket) -> None:
    """Both directions until either side closes."""
    a.settimeout(None)
    b.settimeout(None)
    sel = selectors.DefaultSelector()
    sel.register(a, selectors.EVENT_READ, b)
    sel.register(b, selectors.EVENT_READ, a)
    try:
        while True:
            for key, _ in sel.select(timeout=300):
                src = key.fileobj
                assert isinstance(src, socket.socket)  # a or b
                data = src.recv(65536)
                if not data:
                    return
                key.data.sendall(data)
    except OSError:
        return
    finally:
        sel.close()
