"""A scripted MCP server for the client tests, on the SDK's own server API (MCPServer).

stdio by default; `--http PORT --token T` serves the same tools over streamable HTTP on 127.0.0.1 and
answers 401 unless `Authorization: Bearer T` is sent. `--marker FILE` writes the process environment's
MARKER variable and the process id to FILE at start (the tests check the wrap hook and the env with it).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import subprocess
import sys
import time

from mcp.server.mcpserver import Image, MCPServer
from mcp_types import CallToolResult, EmbeddedResource, TextContent, TextResourceContents

# A 1x1 transparent PNG.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==")

server = MCPServer("toolbox", version="1.2.3")


@server.tool(description="Echo the text back, upper-cased.")
def shout(text: str) -> str:
    return text.upper()


@server.tool(description="An image and an embedded text resource.")
def picture() -> list:
    resource = EmbeddedResource(resource=TextResourceContents(uri="file:///notes.txt", mime_type="text/plain",
                                                              text="some notes"))
    return [TextContent(text="here is a picture"), Image(data=PNG, format="png"), resource]


@server.tool(description="Always fails the way a tool reports failure: isError.")
def broken() -> CallToolResult:
    return CallToolResult(content=[TextContent(text="the thing is broken")], is_error=True)


@server.tool(description="Never returns.")
def hang() -> str:
    sys.stderr.write("toolbox: hanging\n")  # in the client's log: a test waits for it
    sys.stderr.flush()
    while True:
        time.sleep(1)


_GATHER = {"arrived": 0, "waiting": 0, "peak": 0}


@server.tool(description="Waits until COUNT calls have arrived (or TIMEOUT_S seconds pass), then says how many waited "
                         "at once.")
async def gather(count: int, timeout_s: float = 30.0) -> str:
    import anyio

    _GATHER["arrived"] += 1
    _GATHER["waiting"] += 1
    _GATHER["peak"] = max(_GATHER["peak"], _GATHER["waiting"])
    end = time.monotonic() + timeout_s
    while _GATHER["arrived"] < count and time.monotonic() < end:
        await anyio.sleep(0.01)
    _GATHER["waiting"] -= 1
    return f"peak {_GATHER['peak']}"


@server.tool(description="Sleeps SECONDS, then answers (a server with a fixed latency: bench/bench_parallel.py).")
async def nap(seconds: float) -> str:
    import anyio

    await anyio.sleep(seconds)
    return f"slept {seconds}"


@server.tool(description="Kills its own server process mid-call.")
def die() -> str:
    sys.stderr.write("toolbox: dying on purpose\n")
    sys.stderr.flush()
    os._exit(3)


@server.tool(description="The environment the server process sees.")
def environment() -> str:
    return json.dumps(dict(os.environ), sort_keys=True)


@server.tool(description="`git status` in the server's working directory, as a git-using server would run it.")
def git_status() -> str:
    done = subprocess.run(["git", "status", "--porcelain"], capture_output=True, text=True, stdin=subprocess.DEVNULL,
                          timeout=60)
    return json.dumps({"code": done.returncode, "stdout": done.stdout, "stderr": done.stderr[-2000:],
                       "home": os.environ.get("HOME"), "tmpdir": os.environ.get("TMPDIR")})


def _http(port: int, token: str) -> None:
    import uvicorn

    app = server.streamable_http_app()

    async def guarded(scope, receive, send):  # an ASGI middleware: the header or 401
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            if headers.get(b"authorization") != f"Bearer {token}".encode():
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"text/plain")]})
                await send({"type": "http.response.body", "body": b"unauthorized"})
                return
        await app(scope, receive, send)

    uvicorn.run(guarded, host="127.0.0.1", port=port, log_level="warning", lifespan="on")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int)
    parser.add_argument("--token", default="x")
    parser.add_argument("--marker")
    args = parser.parse_args()
    if args.marker:
        with open(args.marker, "w") as f:
            json.dump({"marker": os.environ.get("MARKER"), "pid": os.getpid()}, f)
    if args.http:
        _http(args.http, args.token)
    else:
        server.run()


if __name__ == "__main__":
    main()
