"""A synchronous facade over the async MCP SDK: one server, one private thread with its own event loop.

The runner's tools are synchronous and may run on any thread; the SDK is anyio. Each McpServer owns a
daemon thread running an asyncio loop, and one long-lived "owner" task on it that enters the SDK `Client`
(cancel scopes must be entered and left by the same task), lists the tools and then waits to be closed.
Calls are coroutines submitted to that loop; the calling thread waits on a concurrent future with a
deadline of its own, so even a stuck loop cannot hold a caller past its timeout.

Every failure leaves as McpStartError / McpCallError with a `kind`:
  spawn     the command could not be started (not found, not executable, bad cwd)            [start]
  timeout   no answer within the start or call timeout                                        [start, call]
  crashed   the process exited (or the HTTP connection failed); later calls fail at once      [start, call]
  protocol  the server's answers are not MCP (non-JSON-RPC stdout, malformed results)        [start, call]
  rpc_error the server answered with a JSON-RPC error (unknown tool, bad arguments, HTTP 401) [start, call]
  closed    close() was called                                                                [call]
Never a traceback or an ExceptionGroup: anything unexpected becomes `protocol` with its message.

The stdio server's environment is the config's `env` over a minimal base (PATH, HOME, LANG, TMPDIR from
`base_env`), then whatever `wrap` (the runner's sandbox) makes of argv and env — nothing else of the
runner's environment reaches it. Its stderr goes to `log_path`, bounded and masked with `masker`
(runner/mcp/boundedlog.py).
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import os
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner.mcp.boundedlog import BoundedLog
from runner.mcp.config import ServerConfig
from runner.record.integrity import AUDIT_KEY_ENV
from runner.record.mask import Masker
from runner.tools.base import Cancel

Wrap = Callable[[list[str], dict[str, str]], tuple[list[str], dict[str, str]]]
BASE_ENV_KEYS = ("PATH", "HOME", "LANG", "TMPDIR")
MAX_TOOL_PAGES = 100  # a server whose cursor never ends cannot hang the start
CLOSE_WAIT_S = 5.0  # graceful close (stdin, SIGTERM, SIGKILL: ~3 s at most) before the hard kill
ABORT_POLL_S = 0.2  # how often a waiting call looks at its caller's stop
CALL_SLACK_S = 2.0  # what the calling thread adds to the call timeout before giving up on the loop


class McpError(Exception):
    """A server failed. `kind` says how (see the module docstring); str() names the server."""

    def __init__(self, server: str, kind: str, message: str) -> None:
        super().__init__(f"MCP server '{server}': {message}")
        self.server, self.kind, self.message = server, kind, message


class McpStartError(McpError):
    pass


class McpCallError(McpError):
    pass


@dataclass
class CallResult:
    """A tools/call result in its wire shape: `content` blocks are dicts (`type`, `text`, `data`, `mimeType`…)."""

    content: list[dict[str, Any]]
    structured_content: Any = None
    is_error: bool = False


@dataclass
class _Death:
    kind: str
    message: str


class McpServer:
    def __init__(self, config: ServerConfig, *, wrap: Wrap | None = None,
                 log_path: str | os.PathLike[str] | None = None, start_timeout_s: float = 30.0,
                 base_env: Mapping[str, str] | None = None, masker: Masker | None = None,
                 client_name: str = "agent-run", client_version: str = "0") -> None:
        self.config = config
        self.name = config.name
        self.tools: list[dict[str, Any]] = []
        self.server_info: dict[str, str | None] = {"name": None, "version": None}
        self.start_timeout_s = start_timeout_s
        self._wrap = wrap
        self._log_path = Path(log_path) if log_path is not None else None
        self._base_env = os.environ if base_env is None else base_env
        self._masker = masker  # its log is masked with it (None: as is)
        self._client_info = (client_name, client_version)
        self._lock = threading.Lock()
        self._started = self._closed = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._owner: concurrent.futures.Future[None] | None = None
        self._ready: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._scope: Any = None  # the owner's anyio CancelScope, touched only on the loop thread
        self._cancel_requested = False
        self._client: Any = None
        self._death: _Death | None = None
        self._http_status: str | None = None  # the last HTTP error status (http transport)
        self._log: BoundedLog | None = None
        self._temp_log: str | None = None
        from runner.mcp.stdio import ProcessState  # anyio and the SDK load when a server starts, not on import

        self._proc = ProcessState()

    # ---- lifecycle ---------------------------------------------------------------------------------------

    def start(self) -> McpServer:
        """Connect, handshake and list the tools. Raises McpStartError (the server is closed by then)."""
        with self._lock:
            if self._started:
                raise RuntimeError(f"MCP server '{self.name}' already started")
            self._started = True
        self._log = self._open_log()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run_loop, name=f"mcp-{self.name}", daemon=True)
        self._thread.start()
        atexit.register(self.close)
        self._owner = asyncio.run_coroutine_threadsafe(self._own(), self._loop)
        try:
            self._ready.result(timeout=self.start_timeout_s)
        except concurrent.futures.TimeoutError:
            error = self._start_failure(None, timed_out=True)
            self.close()
            raise error from None
        except McpStartError:
            self.close()
            raise
        except BaseException:  # KeyboardInterrupt while waiting: leave no process behind
            self.kill()
            self.close(timeout_s=1.0)
            raise
        return self

    def close(self, timeout_s: float = CLOSE_WAIT_S) -> None:
        """Stop the server; idempotent, any thread, bounded (~timeout_s, then a SIGKILL of its process group)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        with contextlib.suppress(Exception):
            atexit.unregister(self.close)
        loop, owner = self._loop, self._owner
        if loop is not None and owner is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop already stopped (interpreter shutdown)
                loop.call_soon_threadsafe(self._cancel_owner)
            with contextlib.suppress(Exception):
                owner.result(timeout=timeout_s)
        self._proc.kill()
        if loop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=1.0)
        if self._log is not None:
            with contextlib.suppress(OSError):
                self._log.close()
        if self._temp_log is not None:
            with contextlib.suppress(OSError):
                os.unlink(self._temp_log)

    def kill(self) -> None:
        """SIGKILL the stdio process group at once (an interrupt); safe from a signal handler. close() still tidies."""
        self._proc.kill()

    @property
    def pid(self) -> int | None:
        return self._proc.pid

    def __enter__(self) -> McpServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- calls ---------------------------------------------------------------------------------------------

    def call(self, tool: str, arguments: Mapping[str, Any] | None, timeout_s: float,
             cancel: Cancel | None = None) -> CallResult:
        """Call one tool. Raises McpCallError; an `isError` result is a CallResult, not an exception. `cancel`: the
        caller's stop (a call running beside others when the run ends): the call is let go, as at its timeout."""
        self._check_usable()
        assert self._loop is not None
        try:
            future = asyncio.run_coroutine_threadsafe(self._call(tool, dict(arguments or {}), timeout_s), self._loop)
        except RuntimeError:  # the loop is gone
            raise McpCallError(self.name, "closed", "the server is closed") from None
        end = time.monotonic() + timeout_s + CALL_SLACK_S
        try:
            while True:
                try:
                    return future.result(timeout=min(ABORT_POLL_S, max(0.0, end - time.monotonic())))
                except concurrent.futures.TimeoutError:
                    if cancel is not None and cancel.stopping():
                        future.cancel()
                        raise McpCallError(self.name, "timeout", f"tool '{tool}' was stopped: the run is ending") \
                            from None
                    if time.monotonic() >= end:
                        raise
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise McpCallError(self.name, "timeout", f"tool '{tool}' did not answer within {timeout_s:g}s") from None
        except concurrent.futures.CancelledError:
            raise McpCallError(self.name, "closed", "the server was closed during the call") from None

    def _check_usable(self) -> None:
        if self._closed:
            raise McpCallError(self.name, "closed", "the server is closed")
        if not self._ready.done() or self._ready.exception() is not None:
            raise McpCallError(self.name, "closed", "the server is not running")
        if self._death is not None:
            raise McpCallError(self.name, self._death.kind, self._death.message)

    async def _call(self, tool: str, arguments: dict[str, Any], timeout_s: float) -> CallResult:
        import anyio
        from mcp.shared.exceptions import MCPError
        from mcp_types import CONNECTION_CLOSED
        from pydantic import ValidationError

        self._http_status = None
        client = self._client
        if client is None:
            raise McpCallError(self.name, "closed", "the server is closed")
        try:
            try:
                with anyio.fail_after(timeout_s):
                    result = await client.call_tool(tool, arguments, read_timeout_seconds=timeout_s)
            except Exception:
                if self._closed:  # close() pulled the connection from under the call
                    raise McpCallError(self.name, "closed", f"the server was closed during tool '{tool}'") from None
                raise
        except McpCallError:
            raise
        except TimeoutError:
            if self._death is not None:
                raise McpCallError(self.name, self._death.kind, self._death.message) from None
            raise McpCallError(self.name, "timeout", f"tool '{tool}' did not answer within {timeout_s:g}s") from None
        except MCPError as exc:
            death = await self._settle_death()
            if death is None and exc.error.code == CONNECTION_CLOSED:
                self._death = death = _Death("crashed", f"the connection to the server closed{self._status_hint()}")
            if death is not None:
                raise McpCallError(self.name, death.kind, death.message) from None
            raise McpCallError(self.name, "rpc_error", f"tool '{tool}': error {exc.error.code}: "
                                                       f"{exc.error.message}{self._status_hint()}") from None
        except ValidationError as exc:
            raise McpCallError(self.name, "protocol", f"tool '{tool}' returned a malformed result: "
                                                      f"{_first_line(exc)}") from None
        except Exception as exc:
            death = await self._settle_death()
            if death is not None:
                raise McpCallError(self.name, death.kind, death.message) from None
            kind = "crashed" if self.config.transport == "http" and _is_connection_error(exc) else "protocol"
            self._death = _Death(kind, f"tool '{tool}': {_describe(exc)}") if kind == "crashed" else None
            raise McpCallError(self.name, kind, f"tool '{tool}': {_describe(exc)}") from None
        return CallResult(
            content=[block.model_dump(by_alias=True, mode="json", exclude_none=True) for block in result.content],
            structured_content=result.structured_content, is_error=bool(result.is_error))

    async def _settle_death(self) -> _Death | None:
        """A closed connection is usually the process exiting: give the reader a moment to see it."""
        import anyio

        with anyio.move_on_after(1.0):
            while self._death is None and self.config.transport == "stdio" and self._proc.eof:
                await anyio.sleep(0.02)
        return self._death

    # ---- the loop thread ---------------------------------------------------------------------------------

    def _run_loop(self) -> None:
        assert self._loop is not None
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_forever()
        finally:
            with contextlib.suppress(Exception):
                self._loop.run_until_complete(self._loop.shutdown_asyncgens())
            self._loop.close()

    def _cancel_owner(self) -> None:
        self._cancel_requested = True
        if self._scope is not None:
            self._scope.cancel()

    async def _own(self) -> None:
        """Enter the SDK client, list the tools, hold the connection until close() cancels this task's scope."""
        import anyio

        with anyio.CancelScope() as scope:
            self._scope = scope
            if self._cancel_requested:
                scope.cancel()
            try:
                async with AsyncExitStack() as stack:
                    client = await self._connect(stack)
                    self.tools = await self._list_tools(client)
                    info = client.server_info
                    self.server_info = {"name": getattr(info, "name", None), "version": getattr(info, "version", None)}
                    self._client = client
                    self._ready.set_result(None)
                    await anyio.sleep_forever()
            except BaseException as exc:  # CancelledError and ExceptionGroups too: every failure ends here
                if not self._ready.done():
                    self._ready.set_exception(self._start_failure(exc))
                elif self._death is None and not scope.cancel_called:
                    # The SDK's connection ended under us (an HTTP stream failed): later calls fail fast.
                    self._death = _Death("crashed", f"the connection to the server ended: {_describe(_leaf(exc))}")
                if not isinstance(exc, Exception) and not scope.cancel_called:
                    raise
            finally:
                self._client = None

    async def _connect(self, stack: AsyncExitStack) -> Any:
        from mcp.client import Client
        from mcp_types import Implementation

        if self.config.transport == "http":
            transport = await self._http_transport(stack)
        else:
            transport = self._stdio_transport()
        name, version = self._client_info
        client = Client(transport, cache=None, client_info=Implementation(name=name, version=version))
        return await stack.enter_async_context(client)

    def _stdio_transport(self) -> Any:
        from runner.mcp.stdio import stdio_transport

        cfg = self.config
        assert cfg.command is not None and self._log is not None
        env = {k: self._base_env[k] for k in BASE_ENV_KEYS if k in self._base_env}
        env.update(cfg.env)
        env.pop(AUDIT_KEY_ENV, None)  # sandboxed or not, a server never holds the key its calls are chained with
        argv = [cfg.command, *cfg.args]
        if self._wrap is not None:
            argv, env = self._wrap(list(argv), dict(env))
        self._proc.on_exit = self._on_exit
        return stdio_transport(list(argv), dict(env), cfg.cwd, self._log, self._proc)

    async def _http_transport(self, stack: AsyncExitStack) -> Any:
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        assert self.config.url is not None
        # The SDK's defaults: 30 s to connect/write, 300 s to read (a response stream may stay open).
        async def note_status(response: Any) -> None:
            # The SDK turns an HTTP error without a JSON-RPC body into a bare -32603; the status says why.
            if response.status_code >= 400:
                self._http_status = f"HTTP {response.status_code} {response.reason_phrase}".strip()

        http = httpx2.AsyncClient(headers=dict(self.config.headers), timeout=httpx2.Timeout(30.0, read=300.0),
                                  event_hooks={"response": [note_status]})
        await stack.enter_async_context(http)
        return streamable_http_client(self.config.url, http_client=http)

    def _on_exit(self) -> None:
        """The stdio reader saw the process go (loop thread): later calls fail fast."""
        if self._death is None and not self._proc.shutting_down:
            code = self._proc.returncode
            how = f"exited with code {code}" if code is not None else "closed its stdout"
            self._death = _Death("crashed", f"the server process {how}{self._stderr_hint()}")

    async def _list_tools(self, client: Any) -> list[dict[str, Any]]:
        tools: list[dict[str, Any]] = []
        cursor: str | None = None
        seen: set[str] = set()
        for _ in range(MAX_TOOL_PAGES):
            page = await client.list_tools(cursor=cursor)
            for tool in page.tools:
                wire = tool.model_dump(by_alias=True, mode="json", exclude_none=True)
                tools.append({"name": tool.name, "description": tool.description or "",
                              "inputSchema": wire.get("inputSchema") or {"type": "object", "properties": {}},
                              "annotations": wire.get("annotations")})
            cursor = page.next_cursor
            if not cursor or cursor in seen:
                break
            seen.add(cursor)
        return tools

    # ---- errors and logs ---------------------------------------------------------------------------------

    def _start_failure(self, exc: BaseException | None, *, timed_out: bool = False) -> McpStartError:
        from mcp.shared.exceptions import MCPError

        leaf = _leaf(exc) if exc is not None else None
        garbage = self._proc.garbage
        if timed_out or leaf is None:
            if garbage:
                return McpStartError(self.name, "protocol", f"no MCP answer within {self.start_timeout_s:g}s; its "
                                     f"stdout is not JSON-RPC: {garbage[0]!r}{self._stderr_hint()}")
            return McpStartError(self.name, "timeout", f"did not complete the MCP handshake within "
                                 f"{self.start_timeout_s:g}s{self._stderr_hint()}")
        if isinstance(leaf, OSError) and self.config.transport == "stdio" and self._proc.pid is None:
            return McpStartError(self.name, "spawn", f"cannot start {self.config.command!r}: {_describe(leaf)}")
        if self._proc.eof or self._death is not None:
            code = self._proc.returncode
            how = f"exited with code {code}" if code is not None else "closed its stdout"
            extra = f"; its stdout is not JSON-RPC: {garbage[0]!r}" if garbage else ""
            return McpStartError(self.name, "crashed", f"the server process {how} during start{extra}"
                                 f"{self._stderr_hint()}")
        if isinstance(leaf, MCPError):
            return McpStartError(self.name, "rpc_error", f"handshake failed: error {leaf.error.code}: "
                                 f"{leaf.error.message}{self._status_hint()}{self._stderr_hint()}")
        if self.config.transport == "http" and _is_connection_error(leaf):
            return McpStartError(self.name, "crashed", f"cannot reach {self.config.shown}: {_describe(leaf)}")
        return McpStartError(self.name, "protocol", f"handshake failed: {_describe(leaf)}{self._stderr_hint()}")

    def _open_log(self) -> BoundedLog:
        if self._log_path is not None:
            self._log_path.parent.mkdir(parents=True, exist_ok=True)
            file = open(self._log_path, "ab")  # noqa: SIM115 — held for the server's life, closed by close()
        else:
            fd, self._temp_log = tempfile.mkstemp(prefix=f"agent-run-mcp-{self.name}-", suffix=".log")
            file = os.fdopen(fd, "ab")
        log = BoundedLog(file, masker=self._masker)
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        log.write(f"[agent-run] {stamp} starting {self.config.describe()}\n".encode(errors="replace"))
        return log

    def _status_hint(self) -> str:
        return f" ({self._http_status})" if self._http_status else ""

    def _stderr_hint(self) -> str:
        """The last lines the server wrote to stderr (its own, not our notes), for an error message."""
        if self._log is None or self.config.transport != "stdio":
            return ""
        tail = self._log.recent().decode("utf-8", errors="replace")
        lines = [ln for ln in tail.splitlines() if ln.strip() and not ln.startswith("[agent-run]")][-5:]
        return f"; stderr: {' | '.join(lines)[-600:]}" if lines else ""


def _leaf(exc: BaseException) -> BaseException:
    """The first real error inside (nested) ExceptionGroups, skipping cancellations."""
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            leaf = _leaf(inner)
            if not isinstance(leaf, (asyncio.CancelledError, GeneratorExit)):
                return leaf
        return _leaf(exc.exceptions[0]) if exc.exceptions else exc
    return exc


def _is_connection_error(exc: BaseException) -> bool:
    names = {cls.__name__ for cls in type(exc).__mro__}
    return bool(names & {"TransportError", "ConnectError", "NetworkError", "RemoteProtocolError", "ConnectionError",
                         "ClosedResourceError", "BrokenResourceError", "EndOfStream"})


def _describe(exc: BaseException) -> str:
    text = _first_line(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [""])[0][:500]


__all__ = ["CallResult", "McpCallError", "McpError", "McpServer", "McpStartError", "Wrap"]
