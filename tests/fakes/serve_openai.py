"""The scripted OpenAI server (tests/fakes/openai_server.py) as a process of its own, for a CI job or a workflow's
steps that need a model and have no secret: `python3 -m tests.fakes.serve_openai SCRIPT.json` from a checkout.

SCRIPT.json is a list of replies, `{"content": TEXT, "calls": [[TOOL, ARGS], ...]}`, answered in order; or an object
mapping a marker (a phrase of a task) to such a list, for conversations that may arrive in any order (the server's
`route`). Standard library only, Python 3.10 and later (an Ubuntu runner's own python3).

`--detach` serves from a child process in a session of its own and returns at once, once the port is bound,
printing the base URL (`http://127.0.0.1:PORT/v1`) on stdout; `--pid-file` records the child's pid (by default
a file in the directory SERVE_OPENAI_PIDS names, when set: the test suite stops what a step left). Without it, the
URL is printed and the server runs until SIGTERM or SIGINT. Either way it stops by itself after `--lifetime`
seconds (default one hour), so that nothing outlives a job that forgot it.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from tests.fakes.openai_server import FakeOpenAI, Step, reply


def steps(items: list[dict[str, Any]]) -> list[Step]:
    return [reply(item.get("content"), [(name, args) for name, args in item.get("calls") or []]) for item in items]


def load(server: FakeOpenAI, script: Any) -> None:
    if isinstance(script, list):
        server.add(*steps(script))
    else:
        for marker, items in script.items():
            server.route(marker, *steps(items))


def serve(script: Any, lifetime: float, announce: Any) -> None:
    """Serve until SIGTERM, SIGINT or `lifetime` seconds; `announce(url)` once the port is bound."""
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    with FakeOpenAI() as server:
        load(server, script)
        announce(server.base_url)
        stop.wait(lifetime)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python3 -m tests.fakes.serve_openai")
    parser.add_argument("script", type=Path)
    parser.add_argument("--detach", action="store_true")
    parser.add_argument("--pid-file", type=Path)
    parser.add_argument("--lifetime", type=float, default=3600.0)
    args = parser.parse_args(argv)
    script = json.loads(args.script.read_text(encoding="utf-8"))
    if not args.detach:
        serve(script, args.lifetime, lambda url: print(url, flush=True))
        return
    read, write = os.pipe()
    pid = os.fork()
    if pid:  # the parent: wait for the child's URL (empty: it failed), print it and return
        os.close(write)
        with os.fdopen(read) as pipe:
            url = pipe.read().strip()
        if not url:
            sys.exit("serve_openai: the server did not start")
        pid_file = args.pid_file or (Path(os.environ["SERVE_OPENAI_PIDS"]) / str(pid)
                                     if os.environ.get("SERVE_OPENAI_PIDS") else None)
        if pid_file:
            pid_file.write_text(f"{pid}\n", encoding="utf-8")
        print(url, flush=True)
        return
    os.close(read)
    os.setsid()
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):  # a step's $(...) waits for every holder of its pipe: the child holds none
        os.dup2(null, fd)

    def announce(url: str) -> None:
        os.write(write, url.encode())
        os.close(write)

    try:
        serve(script, args.lifetime, announce)
    finally:
        os._exit(0)


if __name__ == "__main__":
    main()
