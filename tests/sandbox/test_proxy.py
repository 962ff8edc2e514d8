"""runner/sandbox/proxy.py over real sockets: raw HTTP to the proxy's Unix socket, real origins on loopback."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from runner.policy.egress import Verdict
from runner.sandbox.proxy import EgressProxy

TIMEOUT_S = 10.0


class Decider:
    """The proxy's `decide`: one verdict for everything, and a record of what it was asked."""

    def __init__(self, verdict: Verdict) -> None:
        self.verdict = verdict
        self.calls: list[tuple[str, int]] = []
        self._lock = threading.Lock()

    def __call__(self, host: str, port: int) -> Verdict:
        with self._lock:
            self.calls.append((host, port))
        return self.verdict


class Origin:
    """A loopback HTTP server recording each request: (method, path, headers, body)."""

    def __init__(self) -> None:
        origin = self
        self.requests: list[tuple[str, str, dict[str, str], bytes]] = []

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                origin.requests.append((self.command, self.path, {k.lower(): v for k, v in self.headers.items()},
                                        body))
                reply = f"hello from {self.path}".encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            do_GET = _answer
            do_POST = _answer

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class RawOrigin:
    """A TCP server that answers the first request head on a connection and keeps reading what follows."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(TIMEOUT_S)
        self.port = self.sock.getsockname()[1]
        self.received = b""
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        try:
            conn, _ = self.sock.accept()
        except OSError:
            return
        with conn:
            conn.settimeout(TIMEOUT_S)
            replied = False
            while True:
                try:
                    chunk = conn.recv(65536)
                except OSError:
                    return
                if not chunk:
                    return
                self.received += chunk
                if not replied and b"\r\n\r\n" in self.received:
                    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                    replied = True

    def close(self) -> None:
        self.sock.close()
        self.thread.join(TIMEOUT_S)


@pytest.fixture
def decider() -> Decider:
    return Decider(Verdict(True, True, "rule net:127.0.0.1:* from test"))


@pytest.fixture
def proxy(tmp_path: Path, decider: Decider) -> Iterator[EgressProxy]:
    p = EgressProxy(str(tmp_path / "p.sock"), decider).start()
    try:
        yield p
    finally:
        p.close()


@pytest.fixture
def origin() -> Iterator[Origin]:
    o = Origin()
    try:
        yield o
    finally:
        o.close()


def _connect(proxy: EgressProxy) -> socket.socket:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(TIMEOUT_S)
    s.connect(proxy.socket_path)
    return s


def _read_all(s: socket.socket) -> bytes:
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            return data
        data += chunk


def _read_until(s: socket.socket, marker: bytes) -> bytes:
    data = b""
    while marker not in data:
        chunk = s.recv(65536)
        if not chunk:
            raise AssertionError(f"connection closed before {marker!r}; got {data!r}")
        data += chunk
    return data


def _exchange(proxy: EgressProxy, request: bytes) -> bytes:
    with _connect(proxy) as s:
        s.sendall(request)
        return _read_all(s)


def _status(response: bytes) -> int:
    return int(response.split(b"\r\n", 1)[0].split(b" ")[1])


def _body(response: bytes) -> str:
    return response.partition(b"\r\n\r\n")[2].decode()


def _get(port: int, path: str = "/", host: str = "127.0.0.1", extra: str = "") -> bytes:
    return f"GET http://{host}:{port}{path} HTTP/1.1\r\nHost: {host}:{port}\r\n{extra}\r\n".encode()


def _connect_line(port: int, host: str = "127.0.0.1") -> bytes:
    return f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode()


# (a) CONNECT ------------------------------------------------------------------------------------------


def test_connect_opens_a_tunnel_to_the_decided_host(proxy: EgressProxy, decider: Decider, origin: Origin) -> None:
    with _connect(proxy) as s:
        s.sendall(_connect_line(origin.port))
        head = _read_until(s, b"\r\n\r\n")
        assert head == b"HTTP/1.1 200 Connection Established\r\n\r\n"
        s.sendall(f"GET /through/the/tunnel HTTP/1.1\r\nHost: 127.0.0.1:{origin.port}\r\n\r\n".encode())
        response = _read_all(s)
    assert _status(response) == 200 and _body(response) == "hello from /through/the/tunnel"
    assert [(m, p) for m, p, _h, _b in origin.requests] == [("GET", "/through/the/tunnel")]
    assert decider.calls == [("127.0.0.1", origin.port)]


def test_connect_forwards_bytes_sent_with_the_head(proxy: EgressProxy, origin: Origin) -> None:
    with _connect(proxy) as s:
        s.sendall(_connect_line(origin.port) + f"GET /early HTTP/1.1\r\nHost: x:{origin.port}\r\n\r\n".encode())
        response = _read_all(s)
    assert response.startswith(b"HTTP/1.1 200 Connection Established\r\n\r\nHTTP/1.0 200")
    assert [p for _m, p, _h, _b in origin.requests] == ["/early"]


# (b) plain HTTP -----------------------------------------------------------------------------------------


def test_a_plain_request_goes_out_in_origin_form_without_proxy_headers(proxy: EgressProxy, decider: Decider,
                                                                          origin: Origin) -> None:
    response = _exchange(proxy, _get(origin.port, "/path?q=1", extra="Proxy-Authorization: Basic c2VjcmV0\r\n"
                                     "Proxy-Connection: keep-alive\r\nConnection: keep-alive\r\nX-Kept: yes\r\n"))
    assert _status(response) == 200 and _body(response) == "hello from /path?q=1"
    [(method, path, headers, _body_bytes)] = origin.requests
    assert (method, path) == ("GET", "/path?q=1")
    assert headers["host"] == f"127.0.0.1:{origin.port}"
    assert "proxy-authorization" not in headers and "proxy-connection" not in headers
    assert headers["connection"] == "close" and headers["x-kept"] == "yes"
    assert decider.calls == [("127.0.0.1", origin.port)]


def test_a_plain_request_body_is_forwarded(proxy: EgressProxy, origin: Origin) -> None:
    request = (f"POST http://127.0.0.1:{origin.port}/submit HTTP/1.1\r\nHost: 127.0.0.1:{origin.port}\r\n"
               "Content-Length: 11\r\n\r\nhello world").encode()
    assert _status(_exchange(proxy, request)) == 200
    assert [(m, p, b) for m, p, _h, b in origin.requests] == [("POST", "/submit", b"hello world")]


def test_a_plain_request_without_a_path_asks_for_the_root(proxy: EgressProxy, origin: Origin) -> None:
    request = f"GET http://127.0.0.1:{origin.port} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode()
    assert _status(_exchange(proxy, request)) == 200
    assert [p for _m, p, _h, _b in origin.requests] == ["/"]


# (c) denied ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["connect", "get"])
def test_a_denied_request_gets_403_with_the_reason_and_reaches_nothing(proxy: EgressProxy, decider: Decider,
                                                                       origin: Origin, kind: str) -> None:
    decider.verdict = Verdict(False, False, "no rule allows it (test)")
    request = _connect_line(origin.port) if kind == "connect" else _get(origin.port, "/secret")
    response = _exchange(proxy, request)
    assert _status(response) == 403
    body = _body(response)
    assert "no rule allows it (test)" in body and f"127.0.0.1:{origin.port}" in body
    assert origin.requests == []
    assert decider.calls == [("127.0.0.1", origin.port)]


def test_connect_without_a_port_is_decided_on_443_and_lowercased(proxy: EgressProxy, decider: Decider) -> None:
    decider.verdict = Verdict(False, False, "")
    response = _exchange(proxy, b"CONNECT Example.COM HTTP/1.1\r\n\r\n")
    assert _status(response) == 403 and "not in sandbox.network.allow" in _body(response)
    assert decider.calls == [("example.com", 443)]


# (d) the private-address guard -------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["connect", "get"])
@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_a_loopback_address_allowed_only_by_a_wildcard_is_refused(proxy: EgressProxy, decider: Decider,
                                                                  origin: Origin, kind: str, host: str) -> None:
    decider.verdict = Verdict(True, False, "rule *.example from test")
    request = _connect_line(origin.port, host) if kind == "connect" else _get(origin.port, "/x", host)
    response = _exchange(proxy, request)
    assert _status(response) == 502, response
    assert "loopback" in _body(response)
    assert origin.requests == []
    assert decider.calls == [(host, origin.port)]


# (e) malformed ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("request_bytes", [
    b"GARBAGE\r\n\r\n",
    b"GET  http://127.0.0.1/ HTTP/1.1\r\n\r\n",  # two spaces: four parts
    b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",  # origin-form: not a proxy request
    b"GET ftp://127.0.0.1/file HTTP/1.1\r\n\r\n",
    b"GET https://127.0.0.1/ HTTP/1.1\r\n\r\n",  # https goes through CONNECT
    b"GET http:///nohost HTTP/1.1\r\n\r\n",
])
def test_a_malformed_request_gets_400_and_is_not_decided(proxy: EgressProxy, decider: Decider,
                                                         request_bytes: bytes) -> None:
    response = _exchange(proxy, request_bytes)
    assert _status(response) == 400, response
    assert decider.calls == []


def test_a_head_that_never_ends_gets_400(proxy: EgressProxy, decider: Decider) -> None:
    with _connect(proxy) as s:
        s.sendall(b"CONNECT 127.0.0.1:1 HTTP/1.1\r\n")
        s.shutdown(socket.SHUT_WR)
        response = _read_all(s)
    assert _status(response) == 400 and "closed before the request head ended" in _body(response)
    assert decider.calls == []


def test_a_head_too_large_gets_400(proxy: EgressProxy, decider: Decider) -> None:
    with _connect(proxy) as s:
        s.sendall(b"GET http://127.0.0.1/ HTTP/1.1\r\nX-Big: " + b"a" * (70 * 1024))
        response = _read_all(s)
    assert _status(response) == 400 and "too large" in _body(response)
    assert decider.calls == []


# (f) one connection, one destination ---------------------------------------------------------------------


def test_a_connection_stays_bound_to_the_host_decided_first(proxy: EgressProxy, decider: Decider,
                                                            origin: Origin) -> None:
    first = RawOrigin()  # keeps the connection open after answering, so a second request can follow
    try:
        with _connect(proxy) as s:
            s.sendall(_get(first.port, "/first", extra="Proxy-Connection: keep-alive\r\n"))
            assert _read_until(s, b"ok").startswith(b"HTTP/1.1 200 OK")
            s.sendall(_get(origin.port, "/second"))  # another host, same connection
            deadline = time.monotonic() + TIMEOUT_S
            while b"/second" not in first.received and time.monotonic() < deadline:
                time.sleep(0.02)
        # The second request went, unparsed, to the first host, never to the one it names.
        assert first.received.startswith(b"GET /first HTTP/1.1\r\n")
        assert f"GET http://127.0.0.1:{origin.port}/second".encode() in first.received
    finally:
        first.close()
    assert origin.requests == []
    assert decider.calls == [("127.0.0.1", first.port)]


def test_pipelined_requests_for_two_hosts_reach_only_the_first(proxy: EgressProxy, decider: Decider,
                                                               origin: Origin) -> None:
    other = Origin()
    try:
        response = _exchange(proxy, _get(origin.port, "/one") + _get(other.port, "/two"))
    finally:
        other.close()
    assert _status(response) == 200
    assert other.requests == []
    assert [p for _m, p, _h, _b in origin.requests] == ["/one"]
    assert decider.calls == [("127.0.0.1", origin.port)]


# lifecycle ------------------------------------------------------------------------------------------------


def test_close_removes_the_socket_and_stops_listening(tmp_path: Path, decider: Decider) -> None:
    path = tmp_path / "q.sock"
    path.write_text("stale")  # a leftover from an earlier run is replaced
    p = EgressProxy(str(path), decider).start()
    assert path.is_socket()
    p.close()
    assert not path.exists()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s, pytest.raises(OSError):
        s.settimeout(TIMEOUT_S)
        s.connect(str(path))


@pytest.mark.parametrize("request_bytes", [b"CONNECT 127.0.0.1:99999 HTTP/1.1\r\n\r\n",
                                           b"GET http://127.0.0.1:99999/ HTTP/1.1\r\n\r\n",
                                           b"GET http://[::1/ HTTP/1.1\r\n\r\n"])
def test_a_bad_port_or_bracket_gets_400(tmp_path: Path, request_bytes: bytes) -> None:
    proxy = EgressProxy(str(tmp_path / "p.sock"), lambda h, p: Verdict(True, True)).start()
    try:
        assert _status(_exchange(proxy, request_bytes)) == 400
    finally:
        proxy.close()


def test_a_request_naming_a_callers_token_is_decided_by_that_caller(proxy: EgressProxy, decider: Decider,
                                                                    origin: Origin) -> None:
    # Several agents' commands run at once: each command's proxy URL carries its own token (Sandbox.calling), and
    # its connections are decided under its own call, never under a sibling's or the run's.
    import base64

    first, second = Decider(Verdict(False, False, "first")), Decider(Verdict(True, True))
    proxy.callers.update({"tok-1": first, "tok-2": second})

    def auth(token: str) -> str:
        return f"Proxy-Authorization: Basic {base64.b64encode(f'agent-run:{token}'.encode()).decode()}\r\n"

    assert _status(_exchange(proxy, _get(origin.port, "/one", extra=auth("tok-1")))) == 403
    response = _exchange(proxy, _get(origin.port, "/two", extra=auth("tok-2")))
    assert _status(response) == 200 and _body(response) == "hello from /two"
    assert "proxy-authorization" not in origin.requests[-1][2]  # the token never leaves for the origin
    assert _status(_exchange(proxy, _get(origin.port, "/three", extra=auth("unknown")))) == 200  # the default
    assert (first.calls, len(second.calls), len(decider.calls)) == ([("127.0.0.1", origin.port)], 1, 1)
