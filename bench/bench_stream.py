"""bash output streaming: a command printing ~1 GB through the real bash tool.

Prints throughput and the runner's peak RSS (the tool runs in this process, as in a
run), and checks that the full output landed intact in the spill file.

    python bench/bench_stream.py            # 1 GiB
    python bench/bench_stream.py --mib 256  # quicker
"""

from __future__ import annotations

import argparse
import hashlib
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from runner.tools.base import ToolContext
from runner.tools.bash import Bash


def rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mib", type=int, default=1024)
    args = parser.parse_args()
    size = args.mib * 1024 * 1024
    line = "x" * 99
    before = rss_mib()
    with tempfile.TemporaryDirectory() as tmp:
        ctx = ToolContext(workspace=Path(tmp), outputs_dir=Path(tmp) / "outputs", default_timeout_s=600)
        command = f"yes {line} | head -c {size}"
        started = time.perf_counter()
        out = Bash().run({"command": command, "timeout_s": 600}, ctx)
        elapsed = time.perf_counter() - started
        peak = rss_mib()
        path = Path(out.details["output_path"])
        digest = hashlib.sha256()
        with path.open("rb") as f:
            while chunk := f.read(1 << 20):
                digest.update(chunk)
        intact = path.stat().st_size == size and digest.hexdigest() == out.details["sha256"]
        print(f"bash streaming benchmark, Python {sys.version.split()[0]}")
        print(f"  output:        {size / 2**20:,.0f} MiB, {out.details['lines']:,} lines")
        print(f"  time:          {elapsed:.2f} s  ({size / 2**20 / elapsed:,.0f} MiB/s through the tool)")
        print(f"  peak RSS:      {peak:.1f} MiB (before the command: {before:.1f} MiB)")
        print(f"  model sees:    {len(out.content.encode()):,} bytes (tail, whole lines)")
        print(f"  spill file:    {'intact' if intact else 'CORRUPT'} (size and sha256 match)")
    return 0 if intact else 1


if __name__ == "__main__":
    raise SystemExit(main())
