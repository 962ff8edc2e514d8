"""`runs list`, `runs show` and `resume` on a run whose events.jsonl ends in a huge line: peak RSS and time.

Two logs, each a small run's events then 1 GiB more (a sparse hole: no disk, read back as NULs): a torn tail (a run
killed mid-write: no newline) and a whole line over the line cap (record/jsonl.py MAX_LINE_BYTES, 128 MiB). Each
command runs in a fresh child process (stdout to /dev/null); its peak RSS is `ru_maxrss` from wait4. The readers
measure such a line without holding it: the target is the CLI's own memory (under 100 MiB, the `runs show`
bound), whatever the line's size. `resume` refuses the over-cap line (exit 2) naming it.

    python bench/bench_log_lines.py            # 1 GiB lines, ~10 s
    python bench/bench_log_lines.py --mib 300
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
START = (b'{"agent":null,"model":"m","policy":"default","prev":"' + b"0" * 64 + b'","run_id":"r","seq":1,'
         b'"ts":"2026-01-01T00:00:00.000Z","type":"run_started","workspace":"/w"}\n')


def run(argv: list[str], cwd: Path) -> tuple[int, float, float]:
    """(exit code, peak RSS MiB, seconds) of one fresh agent-run process."""
    code = "from runner.cli.main import main; main()"
    started = time.perf_counter()
    with open(os.devnull, "wb") as null:
        child = subprocess.Popen([sys.executable, "-c", code, *argv], stdout=null, stderr=null, cwd=cwd)
        _, status, usage = os.wait4(child.pid, 0)
    return os.waitstatus_to_exitcode(status), usage.ru_maxrss / 1024, time.perf_counter() - started


def write_log(run_dir: Path, size: int, *, newline: bool) -> None:
    run_dir.mkdir(parents=True)
    (run_dir / "task.md").write_text("t\n", encoding="utf-8")
    with (run_dir / "events.jsonl").open("wb") as f:
        f.write(START)
        f.write(b'{"type":"tool_result","output":"')
        f.truncate(len(START) + size - (1 if newline else 0))
        if newline:
            f.seek(0, 2)
            f.write(b"\n")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mib", type=int, default=1024, help="the huge line's size")
    args = parser.parse_args()
    worst = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for label, newline in (("torn tail", False), ("over the cap", True)):
            ws = Path(tmp) / label.replace(" ", "-")
            run_dir = ws / ".agent-run" / "runs" / "20260101T000000000000Z-bench0"
            write_log(run_dir, args.mib << 20, newline=newline)
            for argv in (["runs", "list"], ["runs", "show", str(run_dir)], ["resume", str(run_dir), "go on"]):
                code, peak, seconds = run(argv, ws)
                worst = max(worst, peak)
                name = " ".join(argv[:2]) if argv[0] == "runs" else argv[0]
                print(f"{label:<13} {name:<10} exit {code}  peak RSS {peak:6.1f} MiB  {seconds:5.2f} s")
    print(f"target: under 100 MiB each: {'met' if worst < 100 else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
