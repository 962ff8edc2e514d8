"""What running a reply's calls at once buys (issue 28): the same turn, sequential (`--parallel-* 1`) and
concurrent (the defaults), through the real `agent-run`, the scripted OpenAI server on 127.0.0.1 and a real MCP
server, interleaved over `--runs` rounds; medians and the ratio concurrent / sequential.

- subagents: the parent asks for 4 `task` children in one reply; every model request (the parent's and each
  child's) takes `--latency` seconds at the server. The turn is the time from the parent's first request to its
  second, less the parent's own request: the children's part. Target ≤ 0.4x.
- MCP: the parent makes N calls of a read-only MCP tool (`readOnlyTools`) that answers after `--latency` seconds,
  for each N of `--calls`. Target for 6 calls ≤ 0.5x.

    python bench/bench_parallel.py [--runs 3] [--latency 1.0] [--calls 6 8] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.conftest import agent_run_argv, clean_env  # noqa: E402
from tests.fakes.openai_server import FakeOpenAI, Step, hang, reply  # noqa: E402

SERVERS = ROOT / "tests" / "mcp" / "servers"
ALLOW = {"extends": "default", "risk": {"rules": [{"domain": "task", "pattern": "agent:**", "level": "medium"}]},
         "permission": {"rules": [
    {"domain": "task", "pattern": "agent:**", "decision": "allow"},
    {"domain": "mcp", "pattern": "mcp:box/*", "decision": "allow"}]}}


class TimedFake(FakeOpenAI):
    """The scripted server, noting when each request arrived (the parent's are those without a child marker)."""

    def __init__(self) -> None:
        super().__init__()
        self.arrivals: list[tuple[float, bool]] = []
        self._arrival_lock = threading.Lock()

    def _next(self, body: dict[str, Any]) -> tuple[int, Step | None]:
        child = "<<CHILD-" in json.dumps(body.get("messages", [])[1:2])
        with self._arrival_lock:
            self.arrivals.append((time.monotonic(), child))
        return super()._next(body)

    def parent_turn(self, latency: float) -> float:
        parent = [t for t, child in self.arrivals if not child]
        return parent[1] - parent[0] - latency


def run(workspace: Path, server: TimedFake, *args: str) -> None:
    env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY="bench")
    proc = subprocess.run([*agent_run_argv(), "--policy", "policy.json", "-q", *args, "task.md"], cwd=workspace,
                          env=env, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise SystemExit(f"agent-run exited {proc.returncode}: {proc.stderr[-2000:]}")


def subagents_turn(workspace: Path, latency: float, parallel: bool) -> float:
    with TimedFake() as server:
        calls = [("task", {"description": f"part {i}", "prompt": f"<<CHILD-{i}>> look at part {i}"}) for i in range(4)]
        server.add(hang(latency), reply(calls=calls), hang(latency), reply("all done"))
        for i in range(4):
            server.route(f"<<CHILD-{i}>>", hang(latency), reply(f"answer {i}"))
        run(workspace, server, *(() if parallel else ("--parallel-agents", "1")))
        return server.parent_turn(latency)


def mcp_turn(workspace: Path, latency: float, calls: int, parallel: bool) -> float:
    with TimedFake() as server:
        # Different arguments per call: identical calls run one by one (the doom-loop guard counts repeats).
        naps = [("mcp__box__nap", {"seconds": latency + i / 1000}) for i in range(calls)]
        server.add(reply(calls=naps), reply("done"))
        run(workspace, server, "--mcp-config", "mcp.json", *(() if parallel else ("--parallel-calls", "1")))
        return server.parent_turn(0.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--latency", type=float, default=1.0)
    parser.add_argument("--calls", type=int, nargs="+", default=[6, 8])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp)
        (workspace / "task.md").write_text("Do the thing.\n")
        (workspace / "policy.json").write_text(json.dumps(ALLOW))
        (workspace / "mcp.json").write_text(json.dumps({"mcpServers": {"box": {
            "command": sys.executable, "args": [str(SERVERS / "toolbox.py")], "readOnlyTools": ["nap"],
            "sandbox": {"readOnly": [str(SERVERS)]}}}}))
        scenarios: dict[str, Any] = {"4 subagent tasks": lambda p: subagents_turn(workspace, args.latency, p)}
        for n in args.calls:
            scenarios[f"{n} read-only MCP calls"] = lambda p, n=n: mcp_turn(workspace, args.latency, n, p)
        figures: dict[str, dict[str, float]] = {}
        for name, scenario in scenarios.items():
            times: dict[bool, list[float]] = {False: [], True: []}
            for _ in range(args.runs):  # interleaved: a machine that slows down affects both alike
                for parallel in (False, True):
                    times[parallel].append(scenario(parallel))
            seq, par = statistics.median(times[False]), statistics.median(times[True])
            figures[name] = {"sequential_s": round(seq, 3), "parallel_s": round(par, 3), "ratio": round(par / seq, 3)}
    if args.json:
        print(json.dumps({"latency_s": args.latency, "runs": args.runs, "figures": figures}, indent=2))
        return
    print(f"latency {args.latency} s per request / per MCP call; medians of {args.runs} interleaved runs")
    print(f"{'turn':28} {'sequential':>11} {'parallel':>9} {'ratio':>6}")
    for name, f in figures.items():
        print(f"{name:28} {f['sequential_s']:>10.2f}s {f['parallel_s']:>8.2f}s {f['ratio']:>5.2f}x")


if __name__ == "__main__":
    main()
