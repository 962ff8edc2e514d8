"""Servers that break the protocol, for the client's failure paths. argv[1] picks one:

garbage  — writes text that is not JSON-RPC to stdout, then waits on stdin
silent   — reads stdin and never answers (not even initialize)
exit     — writes an error to stderr and exits 2 at once
leak     — writes the values of its LEAK and LEAK_TOO variables to stderr, each in two writes a moment apart (so
           two reads of the pipe), then exits 2
"""

from __future__ import annotations

import os
import sys
import time


def main() -> None:
    mode = sys.argv[1]
    if mode == "garbage":
        print("Hello! this is not JSON-RPC", flush=True)
        for line in sys.stdin:
            print(f"nonsense {len(line)}", flush=True)
        return
    if mode == "silent":
        for _ in sys.stdin:
            pass
        time.sleep(600)  # stdin closed: still no answer, for longer than any test waits; the client must kill us
        return
    if mode == "exit":
        sys.stderr.write("fatal: missing API key EXAMPLE_TOKEN\n")
        sys.exit(2)
    if mode == "leak":
        for name in ("LEAK", "LEAK_TOO"):
            value = os.environ[name]
            sys.stderr.write(f"connecting with {value[:5]}")
            sys.stderr.flush()
            time.sleep(0.2)  # the rest in a later read: the runner must mask the value whole all the same
            sys.stderr.write(f"{value[5:]} failed\n")
            sys.stderr.flush()
        sys.exit(2)
    raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
