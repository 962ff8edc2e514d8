"""Loopback HTTP sites for web_fetch tests. `loopback_site` records every request path; `/open?to=URL` redirects
there, anything else answers 200 with the body given. `drip_site` never finishes its headers."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit


@contextmanager
def loopback_site(body: bytes) -> Iterator[ThreadingHTTPServer]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.server.paths.append(self.path)  # type: ignore[attr-defined]
            url = urlsplit(self.path)
            if url.path == "/open":
                self.send_response(302)
                self.send_header("location", parse_qs(url.query)["to"][0])
                self.send_header("content-length", "0")
                self.end_headers()
                return
            self.send_response(200)
            self.send_header("content-type", "text/plain")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.paths = []  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def drip_site(interval_s: float = 0.2) -> Iterator[socket.socket]:
    """A loopback HTTP server that answers every request with a status line and then one byte of a header every
    `interval_s`, never ending the headers: no read ever times out, so only a deadline stops a client. Yields
    the listening socket; `getsockname()[1]` is its port. The connections it holds are closed on the way out."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.1)  # so that the accepting thread sees `closing`
    closing = threading.Event()

    def drip(conn: socket.socket) -> None:
        with conn:
            try:
                conn.recv(65536)
                conn.sendall(b"HTTP/1.1 200 OK\r\nX-Drip: ")
                while not closing.wait(interval_s):
                    conn.sendall(b"x")
            except OSError:  # the client hung up
                pass

    def accept() -> None:
        while not closing.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=drip, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield listener
    finally:
        closing.set()
        listener.close()
