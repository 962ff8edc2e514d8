"""Context economy: an 80-turn scripted session with 8 KB tool results against a 32K window.

Drives the real `agent-run` through the scripted OpenAI server on 127.0.0.1 and
measures at the server, beside a naive sliding window (drop the oldest messages
every turn) simulated on the same outputs:
- the largest request (estimated tokens, chars/4) — must stay under the window;
- total prompt tokens and effective cost (uncached + 0.1 × cached);
- prefix stability (requests whose messages extend the previous request's);
- cache-hit ratio: a token counts as cached when it lies in the common prefix with the
  previous request, in 128-token blocks, for prompts of 1024+ tokens (as providers do);
- the number of summarize steps.

    python bench/bench_context.py [--turns 80] [--window 32768] [--agents-md 4096]

`--agents-md N` puts an AGENTS.md of N bytes in the workspace (project instructions in the fixed prefix).
"""

from __future__ import annotations

import argparse
import itertools
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from runner.core.jsonutil import canonical  # noqa: E402
from tests.conftest import agent_run_argv, clean_env  # noqa: E402
from tests.fakes.openai_server import FakeOpenAI, reply  # noqa: E402

BLOCK = 128


def rendered(body: dict[str, Any]) -> str:
    """The prompt as a provider caches it: tools first, then the messages in order."""
    return canonical(body.get("tools") or []) + "".join(canonical(m) for m in body["messages"])


def measure(bodies: list[dict[str, Any]]) -> dict[str, float]:
    prompts = [rendered(b) for b in bodies]
    tokens = [len(p) // 4 for p in prompts]
    cached = [0]
    for prev, cur, n in zip(prompts, prompts[1:], tokens[1:], strict=False):
        common = 0
        limit = min(len(prev), len(cur))
        while common < limit and prev[common] == cur[common]:
            common += 1
        cached.append((common // 4 // BLOCK) * BLOCK if n >= 1024 else 0)
    extends = [b["messages"][: len(a["messages"])] == a["messages"] for a, b in itertools.pairwise(bodies)]
    total, hit = sum(tokens), sum(cached)
    return {"requests": len(bodies), "largest": max(tokens), "prompt_tokens": total, "cached_tokens": hit,
            "effective": (total - hit) + 0.1 * hit, "cache_hit": hit / total if total else 0.0,
            "stability": sum(extends) / len(extends) if extends else 1.0,
            "summaries": sum(1 for b in bodies if b.get("tool_choice") == "none")}


def sliding_window(conversation: list[dict[str, Any]], turns: list[int], tools: list[Any],
                   window: int) -> list[dict[str, Any]]:
    """What a naive runner sends at each turn: the whole conversation so far, oldest turns dropped to fit."""
    usable = window - min(4096, int(0.2 * window))
    out = []
    for end in turns:
        head, tail = conversation[:2], conversation[2:end]
        while tail and (len(rendered({"tools": tools, "messages": head + tail})) // 4) > usable:
            tail = tail[2:]  # one assistant call and its result
        out.append({"tools": tools, "messages": head + tail})
    return out


def unpruned(run_dir: Path, first: dict[str, Any]) -> tuple[list[dict[str, Any]], list[int]]:
    """The conversation with every tool result whole (trimmed ones read back from their spill files),
    and where each request of the run ended in it."""
    conversation, ends = list(first["messages"][:2]), []
    for line in (run_dir / "events.jsonl").read_text().splitlines():
        e = json.loads(line)
        if e["type"] == "model_request":
            ends.append(len(conversation))
        elif e["type"] == "model_response":
            if (e["message"].get("content") or "").startswith("[goal]"):
                continue  # the scripted server's compaction reply: not part of the conversation
            conversation.append(e["message"])
        elif e["type"] == "tool_result":
            content = e["content"]
            if "full output: " in content and "trimmed as the context grew" in content:
                path = content.split("full output: ")[1].split(" …]")[0]
                content = Path(path).read_text()
            conversation.append({"role": "tool", "tool_call_id": e["call_id"], "content": content})
    return conversation, ends


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=80)
    parser.add_argument("--window", type=int, default=32768)
    parser.add_argument("--agents-md", type=int, default=0, metavar="BYTES", help="an AGENTS.md of this size")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, FakeOpenAI() as server:
        ws = Path(tmp)
        (ws / "task.md").write_text("Collect the random blocks, one per turn.\n")
        if args.agents_md:
            line = "- Keep each change small; run the tests before you finish; prefer the standard library.\n"
            (ws / "AGENTS.md").write_text((line * (args.agents_md // len(line) + 1))[: args.agents_md])
        server.add(*[reply(calls=[("bash", {"command": f"head -c 6000 /dev/urandom | base64 -w 100; echo turn{i}"})])
                     for i in range(args.turns)], reply("done"))
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY="bench")
        # 80 calls is past the default call budget (60): this session is long on purpose.
        (ws / "policy.jsonc").write_text('{"extends": "default", "doomLoop": {"maxToolCalls": 1000}}')
        proc = subprocess.run([*agent_run_argv(), "--context-window", str(args.window), "--approve", "bash:shell:*",
                               "--policy", "policy.jsonc",
                               "--max-turns", str(args.turns + 5), "-q", "--output-format", "json", "task.md"],
                              cwd=ws, env=env, capture_output=True, text=True, timeout=600)
        summary = json.loads(proc.stdout)
        ours = measure(server.requests)
        conversation, ends = unpruned(Path(summary["run_dir"]), server.requests[0])
        naive = measure(sliding_window(conversation, ends, server.requests[0].get("tools") or [], args.window))
    extra = f", AGENTS.md {args.agents_md:,} bytes" if args.agents_md else ""
    print(f"context benchmark: {args.turns} turns, 8 KB results, window {args.window:,} tokens{extra}; "
          f"exit {proc.returncode}")
    print(f"{'':24}{'agent-run':>14}{'sliding window':>16}")
    rows = [("requests", "requests", "{:,.0f}"), ("largest request (tok)", "largest", "{:,.0f}"),
            ("prompt tokens", "prompt_tokens", "{:,.0f}"), ("cached tokens", "cached_tokens", "{:,.0f}"),
            ("effective cost (tok)", "effective", "{:,.0f}"), ("cache-hit ratio", "cache_hit", "{:.3f}"),
            ("prefix stability", "stability", "{:.3f}"), ("summarize steps", "summaries", "{:,.0f}")]
    for label, key, fmt in rows:
        print(f"{label:24}{fmt.format(ours[key]):>14}{fmt.format(naive[key]):>16}")
    usable = args.window - min(4096, int(0.2 * args.window))
    print(f"under the window: {ours['largest'] <= args.window} (usable {usable:,}); "
          f"stage counts {summary.get('metrics', {}).get('pruning_stage_counts')}")
    return 0 if proc.returncode == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
