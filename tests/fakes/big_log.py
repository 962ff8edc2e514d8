"""A run directory whose events.jsonl is big: every turn a `write` call with big arguments (what a run that
writes big files leaves), for `runs show` in bounded memory — tests/cli/test_runs_show.py, and
bench/bench_runs_show.py at the issue's size. Written streamed, the one big string reused."""

from __future__ import annotations

import json
from pathlib import Path


def write_big_run(run_dir: Path, events: int, content_chars: int, big_results: bool = False) -> int:
    """`run_dir` (summary.json, events.jsonl) with `events` turns, each a `write` of `content_chars` characters;
    `big_results`: each tool result carries as much content too. Returns the log's size."""
    run_dir.mkdir(parents=True)
    big = "x" * content_chars
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
                    + ', "arguments": "{\\"path\\": \\"big.txt\\", \\"content\\": \\"')
            f.write(big)
            f.write('\\"}"}\n')
            f.write(line("permission_decision", call_id=call, tool="write", decision="allow",
                         policy_decision="allow") + "\n")
            if big_results:
                f.write(line("tool_result", call_id=call, tool="write", ok=True, error_type=None,
                             bytes=len(big))[:-1] + ', "content": "')
                f.write(big)
                f.write('"}\n')
            else:
                f.write(line("tool_result", call_id=call, tool="write", ok=True, error_type=None, bytes=20,
                             content="wrote big.txt") + "\n")
        f.write(line("run_finished", status="success", exit_code=0) + "\n")
    summary = {"run_id": run_dir.name, "status": "success", "exit_code": 0, "turns": events, "tool_calls": events,
               "usage": {"prompt_tokens": 10 * events, "completion_tokens": 5 * events}, "denials": []}
    (run_dir / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
    return (run_dir / "events.jsonl").stat().st_size
