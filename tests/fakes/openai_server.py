"""A scripted OpenAI-compatible chat-completions server on 127.0.0.1.

Tests give it a script: one step per expected request, in order. A step is
- `reply(content=..., calls=[(name, args), ...])`: an assistant message (args: a
  dict, JSON-encoded for you, or a raw string sent as is, valid JSON or not);
- `error(status, headers=..., body=...)`: an HTTP error response;
- `hang(seconds)`: wait before answering (for timeouts and interrupts); the wait ends early
  when the server closes, so a hang may be as long as the test needs without slowing it;
- `drop()`: close the connection without answering;
- `truncated_stream(content)`: SSE chunks, then the connection closes with no
  finish_reason and no `[DONE]` (a server that died mid-answer);
- `empty_stream()`: a 200 event stream with no chunks at all (llama-cpp-python
  failing inside a stream);
- `trickle(seconds, interval)`: a 200 whose body never completes: SSE keep-alive
  comments (streaming) or JSON whitespace (not streaming) every `interval`, until
  `seconds` have passed or the server closes;
- `raw(status, body, content_type, headers)`: any bytes (an HTML proxy page, truncated JSON, a gzip body
  with `headers={"content-encoding": "gzip"}`);
- `cut_stream()`: a 200 event stream (chunked) whose connection closes before its first chunk: what uvicorn
  sends when a server fails after its streaming response started (llama-cpp-python's refused streamed calls).
`reply` can also send no usage (`usage=NO_USAGE`, as llama-cpp-python does when
streaming), arguments as a JSON object (`args_as_object=True`, Ollama's shape), and
stream in bigger pieces (`piece`). Text is put on the wire as `json.dumps` writes it, so half of a UTF-16 pair in a
scripted string (`HALF_EMOJI`, the high half of 😀) goes out as the JSON escape `\\ud83d`, as a server that cut
an emoji in half sends it: alone, or, with `piece`, a whole pair (`"\\ud83d\\ude00"` in the script) split across
two chunks. Every request body is recorded in
`server.requests`. Streaming requests (`"stream": true`) get server-sent events,
chunked the way OpenAI chunks them. A request carrying a parameter named in
`server.rejects` (e.g. `{"stream_options", "tool_choice"}`) gets HTTP 400 naming
it, outside the script. When the script runs out, the server answers HTTP 400
"script exhausted".

`server.context_window = N` makes it refuse, as OpenAI does (HTTP 400, code `context_length_exceeded`), a
request whose prompt plus its `max_tokens`/`max_completion_tokens` is over N tokens. Tokens are counted as
the runner estimates them (runner/core/jsonutil.py: chars/4 of the canonical `{tools, messages}`), so a
test sees exactly the requests a real server of that window would refuse by the runner's own measure;
`prompt_tokens(body)` gives that count for a recorded request.

A server's own request rules and reply shapes (tests/fakes/dialects.py) plug in as two hooks:
`server.validate(body)` returns an error step to refuse a request the way that server does (else None),
and `server.shape(body, step)` turns a scripted step into what that server would send instead.

Several clients at once (`batch -j N`) would otherwise take steps from the one script in
whatever order their requests arrive: `server.route(marker, *steps)` gives the conversation
whose user messages contain `marker` (e.g. a phrase of its task) a script of its own, with its
own turn count; requests that match no marker take the main script as before. Markers are
tried in the order they were added, and a routed script that runs out is "script exhausted" too.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Step:
    kind: str  # "reply" | "error" | "hang" | "drop" | "truncated_stream" | "empty_stream" | "trickle" | "raw"
    #            | "cut_stream"
    content: str | None = None
    calls: list[tuple[str, Any]] = field(default_factory=list)
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None
    seconds: float = 0.0
    usage: dict[str, int] | None = None
    omit_ids: bool = False
    finish: str | None = None
    args_as_object: bool = False
    interval: float = 0.0
    content_type: str = "application/json"
    piece: int | None = None  # characters per streamed chunk (default: 7 of content, 5 of arguments)
    count: int = 0  # gather: how many requests must wait together


HALF_EMOJI = "\ud83d"  # the high surrogate of U+1F600 alone: sent as the JSON escape `\\ud83d`
NO_USAGE: dict[str, int] = {}  # `reply(usage=NO_USAGE)`: the response carries no usage at all


def reply(content: str | None = None, calls: list[tuple[str, Any]] | None = None, *,
          usage: dict[str, int] | None = None, omit_ids: bool = False, finish: str | None = None,
          args_as_object: bool = False, piece: int | None = None) -> Step:
    return Step("reply", content=content, calls=list(calls or []), usage=usage, omit_ids=omit_ids, finish=finish,
                args_as_object=args_as_object, piece=piece)


def error(status: int, headers: dict[str, str] | None = None, body: Any = None) -> Step:
    return Step("error", status=status, headers=dict(headers or {}), body=body)


def gather(count: int, then: Step, timeout_s: float = 30.0) -> Step:
    """Answer `then` once `count` gathered requests (this one included) have arrived, or after `timeout_s`: requests
    sent one after another each wait it out, requests sent at once go on together. `FakeOpenAI.peak` is how many
    waited here at the same time (what a concurrency test asserts; the timeout only bounds a sequential client)."""
    return Step("gather", body=then, seconds=timeout_s, count=count)


def hang(seconds: float) -> Step:
    return Step("hang", seconds=seconds)


def drop() -> Step:
    """Close the connection without a response (a dropped connection)."""
    return Step("drop")


def truncated_stream(content: str) -> Step:
    """Stream `content`, then close: no finish_reason, no usage, no [DONE]."""
    return Step("truncated_stream", content=content)


def empty_stream() -> Step:
    return Step("empty_stream")


def trickle(seconds: float, interval: float = 0.5) -> Step:
    return Step("trickle", seconds=seconds, interval=interval)


def raw(status: int, body: str | bytes, content_type: str = "application/json",
        headers: dict[str, str] | None = None) -> Step:
    return Step("raw", status=status, body=body.encode() if isinstance(body, str) else body,
                content_type=content_type, headers=dict(headers or {}))


def cut_stream() -> Step:
    return Step("cut_stream")


class FakeOpenAI:
    def __init__(self) -> None:
        self.script: list[Step] = []
        self.requests: list[dict[str, Any]] = []
        self.raw_requests: list[bytes] = []
        # Compaction calls (tool_choice "none") are answered with this, outside the script;
        # an Step("error") here makes them fail instead.
        self.summary: str | Step = "[goal] the task. [progress] several steps done. [next] continue."
        self.compactions = 0
        self.rejects: set[str] = set()  # request parameters answered with HTTP 400 (servers that refuse them)
        # llama-cpp-python's chat templates concatenate an assistant message's content: null fails them, and
        # its server answers HTTP 500 (True: validate requests that way).
        self.null_content_fails = False
        self.context_window: int | None = None  # tokens; None: no limit (see the module's docstring)
        # A dialect's hooks (see the module's docstring): refuse a request, reshape a scripted step.
        self.validate: Callable[[dict[str, Any]], Step | None] | None = None
        self.shape: Callable[[dict[str, Any], Step], Step] | None = None
        self._lock = threading.Lock()
        self._closing = threading.Event()  # set on close: ends hangs and trickles still waiting
        self._turn = 0
        # marker -> (its turn counter, its steps): a conversation's own script (see `route`)
        self._routes: dict[str, tuple[list[int], list[Step]]] = {}
        self._gathered = threading.Condition()
        self._arrived = 0  # gather steps reached so far
        self._waiting = 0  # gather steps waiting now
        self.peak = 0  # the most gather steps waiting at once
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                data = self.rfile.read(length)
                server.raw_requests.append(data)  # the bytes sent: prompt-cache (prefix) tests compare them
                body = json.loads(data or b"{}")
                server._handle(self, body)

        class Server(ThreadingHTTPServer):
            def handle_error(self, request: Any, client_address: Any) -> None:
                if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
                    super().handle_error(request, client_address)  # a client that hung up (a killed run) is normal

        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._closing.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def add(self, *steps: Step) -> FakeOpenAI:
        self.script.extend(steps)
        return self

    def restart(self) -> FakeOpenAI:
        """Number the next run's replies (and their call ids) from 1 again, as a fresh server would."""
        with self._lock:
            self._turn = 0
        return self

    def route(self, marker: str, *steps: Step) -> FakeOpenAI:
        """Steps for the requests whose user messages contain `marker`, in their order, whatever
        other clients ask meanwhile."""
        with self._lock:
            self._routes.setdefault(marker, ([0], []))[1].extend(steps)
        return self

    def _queue(self, body: dict[str, Any]) -> tuple[list[int] | None, list[Step]]:
        """The routed script this request belongs to (with its turn counter), else the main one."""
        if self._routes:
            said = "\n".join(_text(m.get("content")) for m in body.get("messages") or []
                             if isinstance(m, dict) and m.get("role") == "user")
            for marker, (turn, steps) in self._routes.items():
                if marker in said:
                    return turn, steps
        return None, self.script

    # --- request handling ---------------------------------------------------

    def _next(self, body: dict[str, Any]) -> tuple[int, Step | None]:
        with self._lock:
            self.requests.append(body)
            refused = sorted(self.rejects & set(body))
            if refused:
                return self._turn, error(400, body={"error": {"message": f"Unrecognized request argument supplied: "
                                                                         f"{refused[0]}", "type": "invalid_request"}})
            if self.null_content_fails and any(isinstance(m, dict) and m.get("role") == "assistant"
                                               and m.get("content") is None for m in body.get("messages") or []):
                return self._turn, error(500, body={"error": {
                    "message": "can only concatenate str (not \"NoneType\") to str", "type": "internal_server_error"}})
            refusal = over_window(body, self.context_window) if self.context_window else None
            refusal = refusal or (self.validate(body) if self.validate is not None else None)
            if refusal is not None:
                return self._turn, refusal
            if body.get("tool_choice") == "none":
                self.compactions += 1
                return self._turn, self.summary if isinstance(self.summary, Step) else reply(self.summary)
            counter, script = self._queue(body)
            if not script:
                return len(self.requests), None
            if counter is None:
                self._turn += 1
                return self._turn, script.pop(0)
            counter[0] += 1
            return counter[0], script.pop(0)

    def _gather(self, step: Step) -> Step:
        with self._gathered:
            self._arrived += 1
            self._waiting += 1
            self.peak = max(self.peak, self._waiting)
            self._gathered.notify_all()
            self._gathered.wait_for(lambda: self._arrived >= step.count or self._closing.is_set(), timeout=step.seconds)
            self._waiting -= 1
        return step.body

    def _handle(self, h: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        if not h.path.endswith("/chat/completions"):
            return _send_json(h, 404, {"error": {"message": f"no route {h.path}"}})
        turn, step = self._next(body)
        while step is not None and step.kind == "hang":
            self._closing.wait(step.seconds)
            with self._lock:
                script = self._queue(body)[1]
                step = script.pop(0) if script else None
        if step is not None and step.kind == "gather":
            step = self._gather(step)
        if step is None:
            return _send_json(h, 400, {"error": {"message": "fake server: script exhausted", "type": "test"}})
        if self.shape is not None:
            step = self.shape(body, step)
        if step.kind == "cut_stream":
            return _send_cut(h)
        if step.kind == "drop":
            h.close_connection = True
            h.connection.shutdown(socket.SHUT_RDWR)
            return None
        if step.kind == "error":
            return _send_json(h, step.status, step.body if step.body is not None else
                              {"error": {"message": f"scripted {step.status}", "type": "test"}}, step.headers)
        if step.kind == "raw":
            return _send_raw(h, step.status, step.body, step.content_type, step.headers)
        if step.kind == "trickle":
            return _send_trickle(h, bool(body.get("stream")), step.seconds, step.interval, self._closing)
        if step.kind in ("truncated_stream", "empty_stream"):
            model = body.get("model", "m")
            return _send_stream(h, model, {"content": step.content}, {}, None, complete=False)
        message = _message(step, turn)
        usage = {"prompt_tokens": 100 * turn, "completion_tokens": 10, "total_tokens": 100 * turn + 10,
                 "prompt_tokens_details": {"cached_tokens": 50 * (turn - 1)}} if step.usage is None else step.usage
        finish = step.finish or ("tool_calls" if step.calls else "stop")
        if body.get("stream"):
            return _send_stream(h, body.get("model", "m"), message, usage, finish, piece=step.piece)
        completion = {
            "id": f"chatcmpl-{turn}", "object": "chat.completion", "created": 1_700_000_000 + turn,
            "model": body.get("model", "m"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        }
        if usage:
            completion["usage"] = usage
        _send_json(h, 200, completion)


def prompt_tokens(body: dict[str, Any]) -> int:
    """A request's prompt in tokens, as the runner estimates it: chars/4 of the canonical {tools, messages}."""
    text = json.dumps({"tools": body.get("tools") or [], "messages": body.get("messages") or []},
                      sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return (len(text) + 3) // 4


def over_window(body: dict[str, Any], window: int) -> Step | None:
    """OpenAI's refusal of a request that does not fit the model's context window; None when it fits."""
    prompt = prompt_tokens(body)
    completion = body.get("max_completion_tokens") or body.get("max_tokens") or 0
    if prompt + completion <= window:
        return None
    asked = (f"you requested {prompt + completion} tokens ({prompt} in the messages, {completion} in the completion)"
             if completion else f"your messages resulted in {prompt} tokens")
    return error(400, body={"error": {
        "message": f"This model's maximum context length is {window} tokens. However, {asked}. Please reduce the "
                   "length of the messages.", "type": "invalid_request_error", "param": "messages",
        "code": "context_length_exceeded"}})


def _text(content: Any) -> str:
    """A message's text: a string, or the text parts of a list of content parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def _message(step: Step, turn: int) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": step.content}
    if step.calls:
        message["tool_calls"] = [
            {"id": None if step.omit_ids else f"call_{turn}_{i}", "type": "function",
             "function": {"name": name, "arguments": args if isinstance(args, str) or step.args_as_object
                          else json.dumps(args)}}
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


def _send_raw(h: BaseHTTPRequestHandler, status: int, data: bytes, content_type: str,
              headers: dict[str, str] | None = None) -> None:
    h.send_response(status)
    h.send_header("content-type", content_type)
    h.send_header("content-length", str(len(data)))
    for k, v in (headers or {}).items():
        h.send_header(k, v)
    h.end_headers()
    h.wfile.write(data)


def _send_cut(h: BaseHTTPRequestHandler) -> None:
    """The headers of a chunked event stream, then the connection closes without a chunk."""
    h.send_response(200)
    h.send_header("content-type", "text/event-stream; charset=utf-8")
    h.send_header("transfer-encoding", "chunked")
    h.end_headers()
    h.wfile.flush()
    h.close_connection = True
    h.connection.shutdown(socket.SHUT_RDWR)


def _send_trickle(h: BaseHTTPRequestHandler, stream: bool, seconds: float, interval: float,
                  closing: threading.Event) -> None:
    """Headers at once, then a few bytes every `interval` for `seconds` (or until the server closes):
    no read ever times out."""
    h.send_response(200)
    h.send_header("content-type", "text/event-stream" if stream else "application/json")
    h.send_header("connection", "close")
    h.end_headers()
    h.close_connection = True
    end = time.monotonic() + seconds
    try:
        while time.monotonic() < end and not closing.is_set():
            h.wfile.write(b": keep-alive\n\n" if stream else b" ")
            h.wfile.flush()
            closing.wait(interval)
    except OSError:  # the client gave up: what a deadline should make it do
        return


def _send_stream(h: BaseHTTPRequestHandler, model: str, message: dict[str, Any], usage: dict[str, Any],
                 finish: str | None, piece: int | None = None, complete: bool = True) -> None:
    """OpenAI's chunking; `complete=False` stops after the content: no finish_reason, usage or [DONE]."""
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

    content = message.get("content")
    if not complete and content is None:
        h.wfile.flush()
        return
    chunk({"role": "assistant", "content": ""})
    content = content or ""
    step = piece or 7
    for i in range(0, len(content), step):
        chunk({"content": content[i:i + step]})
    if not complete:
        return
    for index, call in enumerate(message.get("tool_calls") or []):
        args = call["function"]["arguments"]
        if not isinstance(args, str):  # Ollama: the whole object in one chunk
            whole = {"id": call["id"], "type": "function", "function": call["function"]}  # no index either
            chunk({"tool_calls": [whole]})
            continue
        chunk({"tool_calls": [{"index": index, "id": call["id"], "type": "function",
                               "function": {"name": call["function"]["name"], "arguments": ""}}]})
        step = piece or 5
        for i in range(0, len(args), step):
            chunk({"tool_calls": [{"index": index, "function": {"arguments": args[i:i + step]}}]})
    chunk({}, finish_reason=finish)
    if usage:
        chunk({}, with_usage=True)
    h.wfile.write(b"data: [DONE]\n\n")
    h.wfile.flush()
