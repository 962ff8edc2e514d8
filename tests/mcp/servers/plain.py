"""A minimal stdio MCP server in plain Python (no SDK import: it starts in milliseconds), for fault tests.

Options:
  --stderr-mb N   write N MiB of log noise to stderr before serving, and 64 KiB more on each tool call
  --junk N        write N lines that are not JSON-RPC to stdout before serving
  --fail-tools    answer tools/list with a JSON-RPC error (the handshake works, the start fails)
  --silent        never answer; ignore stdin's end and SIGTERM (only a SIGKILL ends it)
  --child SECONDS start a grandchild `sleep SECONDS` in the server's process group (a test finds it by its
                  unique SECONDS in /proc, whichever pid namespace the sandbox gave it)

Tools: `cwd` (the server's working directory), `read` (a file's text, or the error), `die` (the process exits
mid-call, its last words on stderr).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time

TOOLS = [{"name": "cwd", "description": "The server's working directory.",
          "inputSchema": {"type": "object", "properties": {}}},
         {"name": "read", "description": "A file's text.",
          "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}},
         {"name": "die", "description": "Exit mid-call.", "inputSchema": {"type": "object", "properties": {}}}]
NOISE = b"server noise: " + b"x" * 1009 + b"\n"  # 1 KiB lines


def noise(size: int) -> None:
    block = NOISE * 64
    for _ in range(size // len(block)):
        os.write(2, block)


def call(name: str, args: dict) -> str:
    if name == "cwd":
        return os.getcwd()
    if name == "die":
        os.write(2, b"plain: dying on purpose\n")
        os._exit(3)
    try:
        with open(args.get("path", ""), encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError as exc:
        return f"error: {exc}"


def answer(message: dict, fail_tools: bool) -> dict | None:
    method, mid = message.get("method"), message.get("id")
    if mid is None:
        return None  # a notification
    out: dict = {"jsonrpc": "2.0", "id": mid}
    if method == "initialize":
        version = (message.get("params") or {}).get("protocolVersion", "2025-06-18")
        out["result"] = {"protocolVersion": version, "capabilities": {"tools": {}},
                         "serverInfo": {"name": "plain", "version": "0.1"}}
    elif method == "tools/list" and not fail_tools:
        out["result"] = {"tools": TOOLS}
    elif method == "tools/call":
        noise(64 * 1024)
        params = message.get("params") or {}
        text = call(params.get("name", ""), params.get("arguments") or {})
        out["result"] = {"content": [{"type": "text", "text": text}], "isError": False}
    elif method == "ping":
        out["result"] = {}
    else:
        out["error"] = {"code": -32601, "message": f"no method {method}"}
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--stderr-mb", type=int, default=0)
    parser.add_argument("--junk", type=int, default=0)
    parser.add_argument("--fail-tools", action="store_true")
    parser.add_argument("--silent", action="store_true")
    parser.add_argument("--child")
    opts = parser.parse_args()
    if opts.child:
        subprocess.Popen(["sleep", opts.child], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    if opts.junk:
        os.write(1, b"".join(b"junk line %d, not JSON-RPC\n" % i for i in range(opts.junk)))
    noise(opts.stderr_mb * 1024 * 1024)
    if opts.silent:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        sys.stdin.read()
        time.sleep(3600)
    for line in sys.stdin:
        if not line.strip():
            continue
        reply = answer(json.loads(line), opts.fail_tools)
        if reply is not None:
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
