"""How fast the CLI starts: `--version`, `policy explain`, `--help`, and a run's first model request.

Each figure is the median wall time over `--runs` runs, interleaved (the order rotates every round), printed
with its ratio against `sys.executable -c pass` of the same venv. The first model request is timed from just
before the process is started to the scripted loopback server receiving the first POST. Asserts nothing.

`--tree N` adds `policy explain` and the first model request in a second workspace holding N files more (a tree three
directories deep, 50 files a directory, an AGENTS.md in every 20th directory): what a large checkout adds to the
start (the walk for the instructions and skills a later run would follow: runner/policy/agentfiles.py).

    python bench/bench_startup.py [--runs 15] [--json] [--tree 50000]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run from a checkout: the scripted server lives in tests/fakes

from tests.fakes.openai_server import FakeOpenAI, reply  # noqa: E402

WARMUP = 2
# name -> (target ratio against `python -c pass`, target seconds); None where the issue sets none
TARGETS: dict[str, tuple[float | None, float | None]] = {
    "--version": (3.0, None), "policy explain bash 'ls'": (10.0, None), "--help": (None, None),
    "first model request": (None, 1.2),
}
TREE_FILES_PER_DIR = 50


def big_tree(root: Path, files: int) -> None:
    """`files` files in directories of TREE_FILES_PER_DIR, three levels deep (d0/e0/f0/…), an AGENTS.md in every
    20th directory (counted among the files)."""
    dirs = -(-files // TREE_FILES_PER_DIR)
    side = max(1, round(dirs ** (1 / 3)) + 1)
    made = 0
    for n in range(dirs):
        here = root / f"d{n // (side * side)}" / f"e{n // side % side}" / f"f{n % side}"
        here.mkdir(parents=True, exist_ok=True)
        for k in range(min(TREE_FILES_PER_DIR, files - made)):
            name = "AGENTS.md" if k == 0 and n % 20 == 0 else f"file{k}.txt"
            (here / name).write_bytes(b"x\n")
            made += 1


def agent_run_exe() -> str:
    exe = Path(sys.executable).parent / "agent-run"
    if not exe.exists():
        raise SystemExit(f"no agent-run next to {sys.executable}: install the project in this venv")
    return str(exe)


# A wheel install is byte-compiled (pip compiles what it installs; the dependencies here are). An editable
# checkout on a machine with PYTHONDONTWRITEBYTECODE=1 recompiles every runner module on every start, which
# measures the compiler, not the CLI: the warm-up runs write bytecode to a private prefix instead.
PYCACHE = tempfile.mkdtemp(prefix="agent-run-bench-pycache-")


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OPENAI_", "AGENT_RUN_")) and k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = PYCACHE
    env.update(extra)
    return env


def timed_process(argv: list[str], cwd: Path, env: dict[str, str]) -> Callable[[], float]:
    def run() -> float:
        start = time.perf_counter()
        done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL)
        elapsed = time.perf_counter() - start
        if done.returncode != 0:  # a command that fails fast would look cheap
            raise SystemExit(f"{argv[1:]} exited {done.returncode}: {done.stderr.strip()[-300:]}")
        return elapsed

    return run


class FirstRequest:
    """One run per call against a fresh one-reply script; the time until the server sees the POST."""

    def __init__(self, server: FakeOpenAI, ws: Path) -> None:
        self.server, self.ws = server, ws
        self.argv = [agent_run_exe(), "task.md"]
        self.env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY="sk-bench")
        self.seen = threading.Event()
        original = server._next

        def spy(body: dict[str, Any]) -> Any:
            self.seen.set()  # set before the reply is sent: the instant the first POST was read
            return original(body)

        server._next = spy  # type: ignore[method-assign]

    def __call__(self) -> float:
        self.server.script.clear()
        self.server.add(reply("done"))
        self.seen.clear()
        mark: list[float] = []

        def note() -> None:
            self.seen.wait()
            mark.append(time.perf_counter())

        watcher = threading.Thread(target=note, daemon=True)
        watcher.start()
        start = time.perf_counter()
        done = subprocess.run(self.argv, cwd=self.ws, env=self.env, capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, timeout=120)
        self.seen.set()
        watcher.join()
        if done.returncode != 0 or done.stdout.strip() != "done":
            raise SystemExit(f"run failed ({done.returncode}): {done.stderr.strip()[-300:]}")
        return mark[0] - start


def interleaved(variants: dict[str, Callable[[], float]], runs: int) -> dict[str, list[float]]:
    names = list(variants)
    times: dict[str, list[float]] = {name: [] for name in names}
    for i in range(WARMUP + runs):
        shift = i % len(names)
        for name in names[shift:] + names[:shift]:
            seconds = variants[name]()
            if i >= WARMUP:
                times[name].append(seconds)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="timed runs per command (after 2 warm-up rounds)")
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    parser.add_argument("--tree", type=int, default=0, metavar="N",
                        help="also time policy explain and the first request in a workspace of N more files")
    args = parser.parse_args()
    exe = agent_run_exe()
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp, FakeOpenAI() as server:
        ws = Path(tmp) / "ws"
        ws.mkdir()
        (ws / "task.md").write_text("Say done.\n", encoding="utf-8")
        env = clean_env()
        variants: dict[str, Callable[[], float]] = {
            "python -c pass": timed_process([sys.executable, "-c", "pass"], ws, env),
            "--version": timed_process([exe, "--version"], ws, env),
            "policy explain bash 'ls'": timed_process([exe, "policy", "explain", "bash", "ls"], ws, env),
            "--help": timed_process([exe, "--help"], ws, env),
            "first model request": FirstRequest(server, ws),
        }
        if args.tree:
            big = Path(tmp) / "big"
            big.mkdir()
            (big / "task.md").write_text("Say done.\n", encoding="utf-8")
            big_tree(big / "tree", args.tree)
            tree = f"{args.tree}-file tree"
            TARGETS[f"policy explain ({tree})"] = TARGETS[f"first model request ({tree})"] = (None, None)
            variants[f"policy explain ({tree})"] = timed_process([exe, "policy", "explain", "bash", "ls"], big, env)
            variants[f"first model request ({tree})"] = FirstRequest(server, big)
        times = interleaved(variants, args.runs)
    base = statistics.median(times["python -c pass"])
    figures: dict[str, Any] = {"runs": args.runs, "python": sys.version.split()[0], "cpus": os.cpu_count(),
                               "baseline_ms": round(1e3 * base, 1), "commands": {}}
    for name, samples in times.items():
        if name == "python -c pass":
            continue
        median = statistics.median(samples)
        ratio_target, seconds_target = TARGETS[name]
        met = (ratio_target is None or median / base <= ratio_target) and \
              (seconds_target is None or median <= seconds_target)
        figures["commands"][name] = {"median_ms": round(1e3 * median, 1), "ratio": round(median / base, 2),
                                     "target": (f"<= {ratio_target:g}x" if ratio_target else
                                                f"<= {seconds_target:g} s" if seconds_target else None),
                                     "met": met if (ratio_target or seconds_target) else None}
    if args.json:
        print(json.dumps(figures, indent=2))
        return
    print(f"agent-run startup, median of {args.runs} interleaved runs ({figures['cpus']} CPUs, "
          f"Python {figures['python']})")
    print(f"  {'python -c pass':<40} {figures['baseline_ms']:>8.1f} ms   1.00x  (baseline)")
    for name, f in figures["commands"].items():
        verdict = "" if f["target"] is None else f"  target {f['target']}: {'met' if f['met'] else 'MISSED'}"
        print(f"  {name:<40} {f['median_ms']:>8.1f} ms {f['ratio']:>6.2f}x{verdict}")


if __name__ == "__main__":
    main()
