"""What the OS sandbox (bubblewrap) costs per call: a bare process, a bash tool call, one with a network allow-list.

Each is timed with the sandbox off and on, alternately. Prints medians, as deltas and ratios; asserts nothing
about wall time. Targets (issue 28): a bash tool call +8 ms at most with the sandbox, and the allow-list at most
+5 ms over that (the run's network namespace and bridge are made once, runner/sandbox/netns.py).

    python bench/bench_sandbox.py [--runs 50] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from runner.policy.gitdirs import git_control
from runner.policy.sandbox_config import config_from
from runner.sandbox.probe import probe
from runner.sandbox.runtime import Sandbox, open_sandbox
from runner.tools.base import ToolContext
from runner.tools.bash import Bash

WARMUP = 5
TARGET_MS = 8.0  # what the sandbox may add to a bash tool call
NET_TARGET_MS = 5.0  # what a network allow-list may add over that
COMMAND = "echo hi"


def interleaved(variants: dict[str, Callable[[], object]], runs: int) -> dict[str, list[float]]:
    """Milliseconds per run of each variant. The order rotates every round, so load drift and whichever
    variant happens to run first (warm caches) weigh on all variants alike."""
    names = list(variants)
    times: dict[str, list[float]] = {name: [] for name in names}
    for i in range(WARMUP + runs):
        shift = i % len(names)
        for name in names[shift:] + names[:shift]:
            start = time.perf_counter()
            variants[name]()
            if i >= WARMUP:
                times[name].append(1e3 * (time.perf_counter() - start))
    return times


def compare(off: list[float], on: list[float]) -> dict[str, float]:
    off_ms, on_ms = statistics.median(off), statistics.median(on)
    return {"off_ms": round(off_ms, 3), "on_ms": round(on_ms, 3), "diff_ms": round(on_ms - off_ms, 3),
            "ratio": round(on_ms / off_ms, 2)}


def run_process(argv: list[str], env: dict[str, str] | None, cwd: Path) -> None:
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    # A sandbox that fails fast would look cheap: make sure the command really ran.
    if done.returncode != 0 or done.stdout.strip() != "hi":
        raise SystemExit(f"command failed ({done.returncode}): {argv[:3]}... {done.stderr.strip()[-300:]}")


def tool_call(ctx: ToolContext) -> Callable[[], object]:
    bash = Bash()

    def call() -> None:
        out = bash.run({"command": COMMAND}, ctx)  # raises ToolError if the command exits non-zero
        if out.content.strip() != "hi":
            raise SystemExit(f"unexpected tool output: {out.content[:300]!r}")

    return call


def measure(ws: Path, box: Sandbox, box_net: Sandbox, runs: int) -> dict[str, Any]:
    argv = ["bash", "-c", COMMAND]
    wrapped, env = box.wrap(argv, os.environ)
    bare = interleaved({"off": lambda: run_process(argv, None, ws), "on": lambda: run_process(wrapped, env, ws)},
                       runs)

    def ctx(sandbox: Sandbox | None) -> ToolContext:
        c = ToolContext(workspace=ws, outputs_dir=ws / "outputs")
        c.sandbox = sandbox
        return c

    # One loop for both tool figures: the network figure shares the "off" samples of the plain one.
    calls = interleaved({"off": tool_call(ctx(None)), "on": tool_call(ctx(box)), "net": tool_call(ctx(box_net))},
                        runs)
    tool = compare(calls["off"], calls["on"])
    net_ms = statistics.median(calls["net"])
    over = round(net_ms - tool["on_ms"], 3)
    net = {**compare(calls["off"], calls["net"]), "vs_sandbox_ms": over, "target_ms": NET_TARGET_MS,
           "within_target": over <= NET_TARGET_MS, "shared_netns": getattr(box_net, "net", None) is not None}
    return {"runs": runs, "warmup": WARMUP, "bwrap": box.probe.bwrap, "python": sys.version.split()[0],
            "cpus": os.cpu_count(), "bare_process": compare(bare["off"], bare["on"]),
            "tool_call": {**tool, "target_ms": TARGET_MS, "within_target": tool["diff_ms"] <= TARGET_MS},
            "tool_call_network_allow": net}


def line(label: str, fig: dict[str, float]) -> str:
    return (f"{label:<34} off {fig['off_ms']:7.2f} ms   on {fig['on_ms']:7.2f} ms   "
            f"{fig['diff_ms']:+7.2f} ms   x{fig['ratio']:.2f}")


def report(r: dict[str, Any]) -> None:
    print(f"sandbox cost benchmark: median of {r['runs']} runs (+{r['warmup']} warm-up), off/on interleaved, "
          f"{r['bwrap']}, Python {r['python']}, {r['cpus']} CPUs")
    print(line(f"1. bare process, bash -c '{COMMAND}'", r["bare_process"]))
    tool = r["tool_call"]
    print(line("2. bash tool call", tool)
          + f"   ({'within' if tool['within_target'] else 'over'} the +{tool['target_ms']:.0f} ms target)")
    net = r["tool_call_network_allow"]
    how = "the run's network namespace joined" if net["shared_netns"] else "a bridge started per call"
    print(line("3. bash tool call, network allow", net)
          + f"   ({net['vs_sandbox_ms']:+.2f} ms over figure 2's sandbox, {how}; "
          f"{'within' if net['within_target'] else 'over'} the +{net['target_ms']:.0f} ms target)")
    walk = r.get("git_walk")
    if walk:
        print(f"4. the .git paths, {walk['files']:,} files      full walk {walk['off_ms']:7.2f} ms   "
              f"the run's walk {walk['on_ms']:7.2f} ms   x{walk['ratio']:.2f}   (paid by every sandboxed process)")


def git_walk(files: int, runs: int) -> dict[str, Any] | None:
    """Figure 4: listing a workspace's `.git` paths, which every sandboxed process pays, on a tree of `files`
    files (10 a directory): the full walk (git_control) vs the run's walk, which lists only what changed."""
    try:
        from runner.sandbox.gitwalk import RACY_NS, GitWalk
    except ImportError:  # a checkout from before the run's walk
        return None
    tree = Path(tempfile.mkdtemp(prefix="bench-gitwalk-")).resolve()
    try:
        (tree / ".git").mkdir()
        for i in range(max(1, files // 10)):
            d = tree / f"d{i // 50}" / f"e{i % 50}"
            d.mkdir(parents=True, exist_ok=True)
            for j in range(10):
                (d / f"f{j}.txt").touch()
        # The tree was just made: a clock past the racy window stands for a workspace checked out earlier.
        walk = GitWalk(tree, now_ns=lambda: time.time_ns() + 2 * RACY_NS)
        times = interleaved({"off": lambda: git_control(tree), "on": walk.control}, runs)
    finally:
        shutil.rmtree(tree, ignore_errors=True)
    return {"files": files, **compare(times["off"], times["on"])}


def checkout(ws: Path) -> None:
    """The workspace as `actions/checkout` leaves it: a repository whose config holds the job token's header, so
    each sandboxed call carries the mounts that hide it (runner/sandbox/credmounts.py)."""
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    subprocess.run(["git", "-C", str(ws), "config", "--local", "http.https://github.com/.extraheader",
                    "AUTHORIZATION: basic eC1hY2Nlc3MtdG9rZW46Z2hzX2V4YW1wbGU="], check=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=50, help=f"timed runs per variant (after {WARMUP} warm-up runs)")
    ap.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    ap.add_argument("--tree-files", type=int, default=15000, help="files in figure 4's workspace (0: skip it)")
    args = ap.parse_args(argv)
    found = probe()
    if not found.available:
        print(f"no sandbox on this machine: {found.reason}", file=sys.stderr)
        return 2

    ws = Path(tempfile.mkdtemp(prefix="bench-sandbox-")).resolve()  # the tools expect a resolved workspace
    checkout(ws)
    boxes: list[Sandbox] = []
    try:
        for section in ({}, {"network": {"allow": ["127.0.0.1:9"]}}):
            boxes.append(open_sandbox(config_from(section, "required"), workspace=ws, protected=[], readable=[],
                                      writable=[], environ=os.environ))
        result = measure(ws, boxes[0], boxes[1], args.runs)
        result["git_walk"] = git_walk(args.tree_files, args.runs) if args.tree_files > 0 else None
    finally:
        for box in boxes:
            box.close()
        shutil.rmtree(ws, ignore_errors=True)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        report(result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
