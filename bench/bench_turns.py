"""The runner's own per-turn cost: does turn 1,000 cost what turn 10 does?

Runs a whole session in this process (`runner.run.assemble.execute`, the real `OpenAIChat`, the real
`openai` SDK over HTTP) against the scripted server on 127.0.0.1 (in a child process). Every
turn the model reads one more file of a fixed size, so messages have fixed sizes and the context
manager keeps the prompt bounded by the window: what is measured is the runner's per-turn overhead,
not the prompt's growth (issue 12's decision).

The figure per turn is the CPU time of this process (`time.process_time`: the runner's threads,
the model-request worker included) from one conversation request to the next: the loop, context
management, the tool call, the event log and the model client building, sending and parsing the
request. The server runs in another process and waiting for it costs no CPU, so neither counts.
Each figure is the median of the ten turns ending at that turn; "client" is the part spent inside
`OpenAIChat.complete`.

    python bench/bench_turns.py [--turns 1000] [--window 131072] [--result-bytes 4096] [--stream]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from runner.model.openai_chat import OpenAIChat  # noqa: E402
from runner.run.assemble import execute  # noqa: E402
from runner.run.options import RunOptions  # noqa: E402
from tests.fakes.openai_server import FakeOpenAI, reply  # noqa: E402

MARKS = (10, 100, 1000)
SPAN = 10  # turns per figure (the median of the SPAN turns ending at the mark)


class Server(FakeOpenAI):
    """The scripted server, without keeping a copy of every request body (1,000 prompts)."""

    def _next(self, body: dict[str, Any]) -> Any:
        out = super()._next(body)
        self.requests.clear()
        return out


class Probe:
    """Wraps `OpenAIChat.complete` (instrumentation only) to timestamp every request in this thread."""

    def __init__(self) -> None:
        self.starts: list[float] = []  # process CPU at each conversation request
        self.client: list[float] = []  # process CPU inside complete(), per conversation request
        self.sizes: list[tuple[int, int]] = []  # messages and prompt bytes, per conversation request
        self.skew = 0.0  # CPU spent in the probe itself, taken out of the figures
        self.compactions = 0

    def install(self) -> None:
        real = OpenAIChat.complete
        probe = self

        def complete(model: OpenAIChat, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                     **kwargs: Any) -> Any:
            t0 = time.process_time()
            if kwargs.get("tool_choice") is not None:
                probe.compactions += 1
                return real(model, messages, tools, **kwargs)
            probe.starts.append(t0 - probe.skew)
            probe.sizes.append((len(messages), len(json.dumps({"messages": messages, "tools": tools}))))
            probe.skew += time.process_time() - t0  # the probe's own work is not the runner's
            t1 = time.process_time()
            try:
                return real(model, messages, tools, **kwargs)
            finally:
                probe.client.append(time.process_time() - t1)

        OpenAIChat.complete = complete  # type: ignore[method-assign]


def serve(turns: int, conn: Any) -> None:
    """The scripted server, in a child process: every turn the model reads the next file."""
    thought = "Next I read the following file to continue with the task as planned. " * 3
    with Server() as server:
        server.add(*[reply(thought, calls=[("read", {"path": f"f{i:05d}.txt"})]) for i in range(turns - 1)],
                   reply("done"))
        conn.send(server.base_url)
        conn.recv()  # until the run is over


def run(turns: int, window: int, result_bytes: int, stream: bool) -> tuple[Probe, dict[str, Any]]:
    ctx = multiprocessing.get_context("fork")
    ours, theirs = ctx.Pipe()
    child = ctx.Process(target=serve, args=(turns, theirs), daemon=True)
    child.start()
    base_url = ours.recv()
    try:
        return _session(turns, window, result_bytes, stream, base_url)
    finally:
        ours.send("stop")
        child.join(10)


def _session(turns: int, window: int, result_bytes: int, stream: bool, base_url: str) -> tuple[Probe, dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="bench-turns-") as tmp:
        ws = Path(tmp) / "ws"
        ws.mkdir()
        policy = Path(tmp) / "policy.jsonc"  # the default policy, with room for one call per turn
        policy.write_text(f'{{"extends": "default", "doomLoop": {{"maxToolCalls": {turns + 10}}}}}', encoding="utf-8")
        (ws / "task.md").write_text("Read the files one by one.\n", encoding="utf-8")
        line = "0123456789 abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ {:06d}\n"
        for i in range(turns):
            body = "".join(line.format(i * 1000 + j) for j in range(result_bytes // len(line.format(0)) + 1))
            (ws / f"f{i:05d}.txt").write_text(body[:result_bytes], encoding="utf-8")
        for key in [k for k in os.environ if k.startswith(("OPENAI_", "AGENT_RUN_"))]:
            del os.environ[key]
        os.environ.update(OPENAI_BASE_URL=base_url, OPENAI_API_KEY="sk-bench", AGENT_RUN_RETRY_BASE_S="0.01")
        probe = Probe()
        probe.install()
        opts = RunOptions(task=str(ws / "task.md"), policy=str(policy), workspace=str(ws), sandbox="off", verbosity=0,
                          cli_settings={"model": "bench-model", "max_turns": turns + 5, "timeout": 7200.0,
                                        "context_window": window, "stream": stream})
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            outcome = execute(opts)
        summary = outcome.summary
        return probe, {"status": f"{summary['status']} (exit {outcome.exit_code})", "requests": len(probe.starts)}


def figures(probe: Probe, mark: int) -> dict[str, float] | None:
    """Turn t's cost: from request t-1 to request t (reply, tool call, context, event log, the next
    request built and sent); its client part is request t-1's `complete()`."""
    if mark > len(probe.starts) or mark < 2:
        return None
    span = range(max(2, mark - SPAN + 1), mark + 1)
    total = [probe.starts[t - 1] - probe.starts[t - 2] for t in span]
    client = [probe.client[t - 2] for t in span]
    return {"total_ms": statistics.median(total) * 1000, "client_ms": statistics.median(client) * 1000,
            "messages": probe.sizes[mark - 1][0], "kb": probe.sizes[mark - 1][1] / 1024}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--window", type=int, default=131072)
    parser.add_argument("--result-bytes", type=int, default=4096)
    parser.add_argument("--stream", action="store_true", help="stream the model's responses (SSE)")
    args = parser.parse_args()
    started = time.monotonic()
    probe, info = run(args.turns, args.window, args.result_bytes, args.stream)
    print(f"{info['requests']} turns, window {args.window}, {args.result_bytes}-byte results, "
          f"{'streamed' if args.stream else 'not streamed'}, {probe.compactions} compaction calls, "
          f"{time.monotonic() - started:.1f} s; {info['status']}")
    print(f"{'turn':>6} {'messages':>9} {'prompt':>9} {'runner CPU/turn':>16} {'in client':>10} {'outside':>9}")
    got = {}
    for mark in MARKS:
        f = figures(probe, mark)
        if f is None:
            continue
        got[mark] = f["total_ms"]
        print(f"{mark:>6} {f['messages']:>9} {f['kb']:>6.0f} KB {f['total_ms']:>13.2f} ms {f['client_ms']:>7.2f} ms "
              f"{f['total_ms'] - f['client_ms']:>6.2f} ms")
    last = max(got, default=10)
    if 10 in got and last != 10:
        print(f"ratio turn {last} / turn 10: {got[last] / got[10]:.2f} (target ≤ 2)")


if __name__ == "__main__":
    main()
