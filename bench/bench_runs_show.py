"""`agent-run runs show` on a big log: peak RSS of the text view, of --json and of --transcript.

Writes a run directory whose events.jsonl is ~286 MB (by default): every turn a `write` call with big
arguments and a tool result as big (what a run that writes big files leaves), then runs `runs show`,
`runs show --json` and `runs show --transcript` each in a fresh child process (stdout to /dev/null) and
prints each child's peak RSS (`ru_maxrss` from wait4) and time. Target: under 100 MiB every way, whatever
the log's size (--transcript: 494 MB on a 189 MB log before it was streamed, issue 42 item 9).

    python bench/bench_runs_show.py              # 286 MB, ~15 s
    python bench/bench_runs_show.py --mb 189     # the issue's --transcript case
    python bench/bench_runs_show.py --mb 64      # quicker
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run from a checkout: the log writer lives in tests/fakes

from tests.fakes.big_log import write_big_run  # noqa: E402


def show(run_dir: Path, *flags: str) -> tuple[int, float, float]:
    """(exit code, peak RSS MiB, seconds) of one fresh `runs show` process."""
    argv = [sys.executable, "-c", "from runner.cli.main import main; main()", "runs", "show", *flags, str(run_dir)]
    started = time.perf_counter()
    with open(os.devnull, "wb") as null:
        child = subprocess.Popen(argv, stdout=null, cwd=ROOT)
        _, status, usage = os.wait4(child.pid, 0)
    return os.waitstatus_to_exitcode(status), usage.ru_maxrss / 1024, time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=int, default=286, help="the log's size in MB")
    parser.add_argument("--events", type=int, default=15, help="turns (each one call and its result)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp) / "runs" / "20260101T000000000000Z-bench0"
        size = write_big_run(run_dir, args.events, max(1, args.mb * 1_000_000 // (2 * args.events)), big_results=True)
        print(f"events.jsonl: {size / 1e6:.0f} MB, {args.events} calls of {size / 2e6 / args.events:.1f} MB "
              "arguments + as much output")
        worst = 0.0
        for label, flags in (("text", ()), ("--json", ("--json",)), ("--transcript", ("--transcript",))):
            code, peak, seconds = show(run_dir, *flags)
            worst = max(worst, peak)
            print(f"runs show {label:<12} exit {code}  peak RSS {peak:6.1f} MiB  {seconds:5.1f} s")
    print(f"target: under 100 MiB every way: {'met' if worst < 100 else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
