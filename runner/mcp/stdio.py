"""The stdio transport: starts an MCP server process with exactly the argv and environment it is given.

Only the pipe and the process live here; the protocol (framing into JSON-RPC messages, the session, the
handshake) is the SDK's — lines are parsed with its message adapter and handed to its `Client` as
`SessionMessage`s, the `Transport` shape the SDK accepts. The SDK's own `stdio_client` cannot be used
because it merges part of the runner's environment (HOME, USER, SHELL, TERM…) into the server's, and the
sandbox wrap must decide the whole environment; it also hides the process id, which a hard kill on
interrupt needs.

Differences from the SDK's reader, on purpose: a stdout line that is not JSON-RPC is dropped (servers
that print a banner still work, and the start error can quote it): the first JUNK_LOGGED go to the
server's log, all are counted, and the count is the log's end line; a line over MAX_LINE ends the
connection instead of growing memory. The server's stderr comes through a pipe into its BoundedLog
(runner/mcp/boundedlog.py), so no amount of noise grows the run directory past its limit.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

import anyio
import mcp_types
from anyio.abc import Process
from mcp.os.posix.utilities import terminate_posix_process_tree
from mcp.shared.message import SessionMessage

from runner.mcp.boundedlog import BoundedLog

MAX_LINE = 32 * 1024 * 1024
STDIN_GRACE_S = 1.0  # after stdin closes, the spec's polite way to ask a server to exit
TERM_GRACE_S = 1.0  # after SIGTERM to the process group, before SIGKILL
REAP_S = 1.0
JUNK_LOGGED = 10  # stdout lines that are not JSON-RPC, written to the log; the rest are only counted


@dataclass
class ProcessState:
    """What the transport learned about its process, read by the client from its own thread."""

    pid: int | None = None
    returncode: int | None = None
    eof: bool = False  # the server closed its stdout by itself (exited), before any shutdown of ours
    shutting_down: bool = False
    garbage: list[str] = field(default_factory=list)  # first non-JSON-RPC stdout lines, for error messages
    junk: int = 0  # how many stdout lines were not JSON-RPC
    on_exit: Callable[[], None] | None = None

    def kill(self) -> None:
        """SIGKILL the whole process group now, from any thread; no-op once the process is known to be gone."""
        if self.pid is None or self.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)


@contextlib.asynccontextmanager
async def stdio_transport(argv: list[str], env: dict[str, str], cwd: str | None, log: BoundedLog,
                          state: ProcessState) -> AsyncIterator[tuple[object, object]]:
    """Spawn `argv` (new session, so the group can be killed as one) and yield the SDK's stream pair."""
    process: Process = await anyio.open_process(argv, env=env, cwd=cwd, stderr=subprocess.PIPE,
                                                start_new_session=True)
    state.pid = process.pid
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)
    notes = _Notes(log, state, process)

    async def reader() -> None:
        assert process.stdout is not None
        # A bytearray searched only where the new chunk landed: a long line arriving in many chunks costs
        # linear time, not a copy and a scan of the whole buffer per chunk.
        buffer = bytearray()
        try:
            async with read_writer:
                async for chunk in process.stdout:
                    searched = len(buffer)
                    buffer += chunk
                    last = buffer.rfind(b"\n", searched)
                    if last < 0:
                        if len(buffer) > MAX_LINE:
                            notes.note(f"stdout line longer than {MAX_LINE} bytes: connection closed")
                            state.garbage.append(f"<a line over {MAX_LINE} bytes>")
                            return
                        continue
                    lines = bytes(buffer[:last]).split(b"\n")
                    del buffer[:last + 1]
                    for raw in lines:
                        message = _message(raw, notes)
                        if message is not None:
                            await read_writer.send(SessionMessage(message))
                await notes.drained()
                # Set before read_writer closes: the session's "connection closed" must find it.
                state.eof = not state.shutting_down
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError):
            pass
        finally:
            if not state.shutting_down:
                await _wait_exit(process, REAP_S)
                state.returncode = process.returncode
                if state.on_exit is not None:
                    state.on_exit()

    async def writer() -> None:
        assert process.stdin is not None
        try:
            async with write_reader:
                async for message in write_reader:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                    await process.stdin.send(data.encode())
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await read_writer.aclose()  # the server stopped reading: pending requests must not wait forever

    async with anyio.create_task_group() as tg:
        tg.start_soon(notes.errors)
        tg.start_soon(reader)
        tg.start_soon(writer)
        try:
            yield read_stream, write_stream
        finally:
            state.shutting_down = True
            with anyio.CancelScope(shield=True):
                await _stop(process, state)
                await notes.finish()
                for stream in (read_stream, write_stream, read_writer, write_reader):
                    await stream.aclose()
            tg.cancel_scope.cancel()


class _Notes:
    """The server's log as the transport writes it: its stderr through the pipe, our notes, the junk count."""

    def __init__(self, log: BoundedLog, state: ProcessState, process: Process) -> None:
        self.log, self.state, self.process = log, state, process
        self.stderr_done = anyio.Event()

    def note(self, text: str) -> None:
        self.log.write(f"[agent-run] {text}\n".encode(errors="replace"))

    def junk(self, line: str) -> None:
        self.state.junk += 1
        if len(self.state.garbage) < 5:
            self.state.garbage.append(line[:200])
        if self.state.junk <= JUNK_LOGGED:
            self.note(f"ignored stdout line that is not JSON-RPC: {line[:200]!r}")

    async def errors(self) -> None:
        """The server's stderr into its bounded log, chunk by chunk (memory: one chunk and the log's tail)."""
        try:
            if self.process.stderr is not None:
                async for chunk in self.process.stderr:
                    self.log.write(chunk)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            pass
        finally:
            self.log.flush_line()  # its last line, even unended, is in the log before anyone quotes it
            self.stderr_done.set()

    async def drained(self) -> None:
        """What the server wrote before it exited is in the log before anyone quotes it (bounded: a
        grandchild may hold the pipe open)."""
        with anyio.move_on_after(REAP_S):
            await self.stderr_done.wait()

    async def finish(self) -> None:
        """After the process stopped: the rest of its stderr, the pipe closed, the junk count as the end line."""
        await self.drained()
        if self.process.stderr is not None:
            with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                await self.process.stderr.aclose()
        if self.state.junk > JUNK_LOGGED:
            self.note(f"{self.state.junk} stdout lines that are not JSON-RPC were ignored (the first {JUNK_LOGGED} "
                      "are above)")


def _message(raw: bytes, notes: _Notes) -> mcp_types.JSONRPCMessage | None:
    """One stdout line as a JSON-RPC message, or None (blank, or junk: counted and maybe logged)."""
    line = raw.decode("utf-8", errors="replace").strip()
    if not line:
        return None
    if line.startswith("{"):  # anything else is no JSON-RPC message: spared the validator's cost
        try:
            return mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        except ValueError:
            pass
    notes.junk(line)
    return None


async def _stop(process: Process, state: ProcessState) -> None:
    """Close stdin, give the server STDIN_GRACE_S to exit, then SIGTERM and SIGKILL its whole group."""
    if process.stdin is not None:
        with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await process.stdin.aclose()
    if not await _wait_exit(process, STDIN_GRACE_S):
        await terminate_posix_process_tree(process, TERM_GRACE_S)
        await _wait_exit(process, REAP_S)
    else:
        # The leader is gone; children it left in its group are not.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
    state.returncode = process.returncode
    if process.stdout is not None:
        with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await process.stdout.aclose()
    # The asyncio transport otherwise stays open (and warns at GC) while a child holds a pipe end.
    transport = getattr(getattr(process, "_process", None), "_transport", None)
    close = getattr(transport, "close", None)
    if callable(close):
        with contextlib.suppress(PermissionError, RuntimeError):
            close()


async def _wait_exit(process: Process, timeout: float) -> bool:
    """Poll returncode: asyncio's wait() also waits for pipe EOF, which a grandchild can hold off forever."""
    with anyio.move_on_after(timeout):
        while process.returncode is None:
            await anyio.sleep(0.01)
    return process.returncode is not None
