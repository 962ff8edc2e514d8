"""A scripted SearXNG-compatible search server on loopback: `GET /search?q=…&format=json` answers the results
given (`{"query", "results": [{"title", "url", "content"}, ...]}`, as SearXNG's JSON format does), and 403 when
`format=json` is missing, as a SearXNG instance whose json format is not enabled does. Records every query."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


@contextmanager
def search_server(results: list[dict[str, Any]], body: bytes | None = None) -> Iterator[ThreadingHTTPServer]:
    """`body`: sent as is instead of the results (a broken endpoint)."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            url = urlsplit(self.path)
            query = parse_qs(url.query)
            self.server.queries.append((url.path, query))  # type: ignore[attr-defined]
            if url.path != "/search" or query.get("format") != ["json"]:
                self._send(403, b"Forbidden", "text/plain")
                return
            answer = body if body is not None else json.dumps(
                {"query": query.get("q", [""])[0], "number_of_results": len(results), "results": results,
                 "answers": [], "infoboxes": [], "suggestions": []}).encode()
            self._send(200, answer, "application/json")

        def _send(self, status: int, data: bytes, kind: str) -> None:
            self.send_response(status)
            self.send_header("content-type", kind)
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.queries = []  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
