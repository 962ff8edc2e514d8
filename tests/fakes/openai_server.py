"""A scripted OpenAI-compatible chat-completions server on 127.0.0.1.

Tests give it a script: one step per expected request, in order. A step is
- `reply(content=..., calls=[(name, args), ...])`: an assistant message (args: a
  dict, JSON-encoded for you, or a raw string sent as is, valid JSON or not);
- `error(status, headers=..., body=...)`: an HTTP error response;
- `hang(seconds)`: wait before answering (for timeouts and interrupts);
- `drop()`: close the connection without answering.
Every request body is recorded in `server.requests`. Streaming requests
(`"stream": true`) get server-sent events, chunked the way OpenAI chunks them.
When the script runs out, the server answers HTTP 400 "script exhausted".
"""

from __future__ import annotations

import json
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Step:
    kind: str  # "reply" | "error" | "hang"
    content: str | None = None
    calls: list[tuple[str, Any]] = field(default_factory=list)
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None
    seconds: float = 0.0
    usage: dict[str, int] | None = None
    omit_ids: bool = False
    finish: str | None = None


def reply(content: str | None = None, calls: list[tuple[str, Any]] | None = None, *,
          usage: dict[str, int] | None = None, omit_ids: bool = False, finish: str | None = None) -> Step:
    return Step("reply", content=content, calls=list(calls or []), usage=usage, omit_ids=omit_ids, finish=finish)


def error(status: int, headers: dict[str, str] | None = None, body: Any = None) -> Step:
    return Step("error", status=status, headers=dict(headers or {}), body=body)


def hang(seconds: float) -> Step:
    return Step("hang", seconds=seconds)


def drop() -> Step:
    """Close the connection without a response (a dropped connection)."""
    return Step("drop")


class FakeOpenAI:
    def __init__(self) -> None:
        self.script: list[Step] = []
        self.requests: list[dict[str, Any]] = []
        # Compaction calls (tool_choice "none") are answered with this, outside the script;
        # an Step("error") here makes them fail instead.
        self.summary: str | Step = "[goal] the task. [progress] several steps done. [next] continue."
        self.compactions = 0
        self._lock = threading.Lock()
        self._turn = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                server._handle(self, body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def add(self, *steps: Step) -> FakeOpenAI:
        self.script.extend(steps)
        return self

    # --- request handling ---------------------------------------------------

    def _next(self, body: dict[str, Any]) -> tuple[int, Step | None]:
        with self._lock:
            self.requests.append(body)
            if body.get("tool_choice") == "none":
                self.compactions += 1
                return self._turn, self.summary if isinstance(self.summary, Step) else reply(self.summary)
            if not self.script:
                return len(self.requests), None
            self._turn += 1
            return self._turn, self.script.pop(0)

    def _handle(self, h: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        if not h.path.endswith("/chat/completions"):
            return _send_json(h, 404, {"error": {"message": f"no route {h.path}"}})
        turn, step = self._next(body)
        while step is not None and step.kind == "hang":
            time.sleep(step.seconds)
            with self._lock:
                step = self.script.pop(0) if self.script else None
        if step is None:
            return _send_json(h, 400, {"error": {"message": "fake server: script exhausted", "type": "test"}})
        if step.kind == "drop":
            h.close_connection = True
            h.connection.shutdown(socket.SHUT_RDWR)
            return None
        if step.kind == "error":
            return _send_json(h, step.status, step.body if step.body is not None else
                              {"error": {"message": f"scripted {step.status}", "type": "test"}}, step.headers)
        message = _message(step, turn)
        usage = step.usage or {"prompt_tokens": 100 * turn, "completion_tokens": 10,
                               "total_tokens": 100 * turn + 10,
                               "prompt_tokens_details": {"cached_tokens": 50 * (turn - 1)}}
        finish = step.finish or ("tool_calls" if step.calls else "stop")
        if body.get("stream"):
            return _send_stream(h, body.get("model", "m"), message, usage, finish)
        _send_json(h, 200, {
            "id": f"chatcmpl-{turn}", "object": "chat.completion", "created": 1_700_000_000 + turn,
            "model": body.get("model", "m"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": usage,
        })


def _message(step: Step, turn: int) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": step.content}
    if step.calls:
        message["tool_calls"] = [
            {"id": None if step.omit_ids else f"call_{turn}_{i}", "type": "function",
             "function": {"name": name, "arguments": args if isinstance(args, str) else json.dumps(args)}}
            for i, (name, args) in enumerate(step.calls)
        ]
    return message


def _send_json(h: BaseHTTPRequestHandler, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
    data = json.dumps(payload).encode()
    h.send_response(status)
    h.send_header("content-type", "application/json")
    h.send_header("content-length", str(len(data)))
    for k, v in (headers or {}).items():
        h.send_header(k, v)
    h.end_headers()
    h.wfile.write(data)


def _send_stream(h: BaseHTTPRequestHandler, model: str, message: dict[str, Any], usage: dict[str, Any],
                 finish: str) -> None:
    h.send_response(200)
    h.send_header("content-type", "text/event-stream")
    h.send_header("connection", "close")
    h.end_headers()
    h.close_connection = True

    def chunk(delta: dict[str, Any], finish_reason: str | None = None, with_usage: bool = False) -> None:
        payload = {"id": "chatcmpl-s", "object": "chat.completion.chunk", "created": 1_700_000_000, "model": model,
                   "choices": [] if with_usage else [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}
        if with_usage:
            payload["usage"] = usage
        h.wfile.write(f"data: {json.dumps(payload)}\n\n".encode())
        h.wfile.flush()

    chunk({"role": "assistant", "content": ""})
    content = message.get("content") or ""
    for i in range(0, len(content), 7):
        chunk({"content": content[i:i + 7]})
    for index, call in enumerate(message.get("tool_calls") or []):
        args = call["function"]["arguments"]
        chunk({"tool_calls": [{"index": index, "id": call["id"], "type": "function",
                               "function": {"name": call["function"]["name"], "arguments": ""}}]})
        for i in range(0, len(args), 5):
            chunk({"tool_calls": [{"index": index, "function": {"arguments": args[i:i + 5]}}]})
    chunk({}, finish_reason=finish)
    chunk({}, with_usage=True)
    h.wfile.write(b"data: [DONE]\n\n")
    h.wfile.flush()
