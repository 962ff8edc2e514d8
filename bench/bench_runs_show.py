"""`agent-run runs show` on a big log: peak RSS of the text view and of --json.

Writes a run directory whose events.jsonl is ~286 MB (by default): every turn a `write` call with big
arguments and a tool result as big (what a run that writes big files leaves), then runs `runs show` and
`runs show --json` each in a fresh child process (stdout to /dev/null) and prints each child's peak RSS
(`ru_maxrss` from wait4) and time. Target: under 100 MiB both ways, whatever the log's size.

    python bench/bench_runs_show.py              # 286 MB, ~15 s
    python bench/bench_runs_show.py --mb 64      # quicker
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def write_log(run_dir: Path, total_mb: int, events: int) -> int:
    """events turns whose call arguments and result content share total_mb; written streamed."""
    run_dir.mkdir(parents=True)
    big = "x" * max(1, total_mb * 1_000_000 // (2 * events))
    seq = 0

    def line(kind: str, **fields: object) -> str:
        nonlocal seq
        seq += 1
        return json.dumps({"seq": seq, "ts": "2026-01-01T00:00:00Z", "run_id": run_dir.name, "type": kind, **fields})

    with (run_dir / "events.jsonl").open("w", encoding="utf-8") as f:
        f.write(line("run_started", model="m", policy="default") + "\n")
        for turn in range(1, events + 1):
            call = f"call_{turn}_0"
            f.write(line("model_request", turn=turn, message_count=2 * turn, estimated_tokens=100) + "\n")
            f.write(line("model_response", turn=turn, usage={"prompt_tokens": 10, "completion_tokens": 5}) + "\n")
            f.write(line("tool_call", turn=turn, call_id=call, tool="write")[:-1]
                    + ', "arguments": "{\\"path\\": \\"big.txt\\", \\"content\\": \\"' + big + '\\"}"}\n')
            f.write(line("permission_decision", call_id=call, tool="write", decision="allow",
                         policy_decision="allow") + "\n")
            f.write(line("tool_result", call_id=call, tool="write", ok=True, error_type=None,
                         bytes=len(big))[:-1] + ', "content": "' + big + '"}\n')
        f.write(line("run_finished", status="success", exit_code=0) + "\n")
    (run_dir / "summary.json").write_text(json.dumps({"run_id": run_dir.name, "status": "success", "exit_code": 0,
                                                      "turns": events, "tool_calls": events, "denials": []}))
    return (run_dir / "events.jsonl").stat().st_size


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
        size = write_log(run_dir, args.mb, args.events)
        print(f"events.jsonl: {size / 1e6:.0f} MB, {args.events} calls of {size / 2e6 / args.events:.1f} MB "
              "arguments + as much output")
        worst = 0.0
        for label, flags in (("text", ()), ("--json", ("--json",))):
            code, peak, seconds = show(run_dir, *flags)
            worst = max(worst, peak)
            print(f"runs show {label:<7} exit {code}  peak RSS {peak:6.1f} MiB  {seconds:5.1f} s")
    print(f"target: under 100 MiB both ways: {'met' if worst < 100 else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
