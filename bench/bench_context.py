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
    python bench/bench_context.py --window 16384 --write-heavy [--turns 40] [--write-kb 12]

`--agents-md N` puts an AGENTS.md of N bytes in the workspace (project instructions in the fixed prefix).
`--write-heavy`: a session made mostly of `write` calls (three writes of `--write-kb` KB, then a small
`bash`, repeated), whose bulk is in the calls' arguments, which stage 2 cannot clear: it prints the peak
request against the usable window, each summary's before/after and the history snapshots written.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
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


def trace(bodies: list[dict[str, Any]]) -> None:
    """Per request: estimated tokens, tokens in the common prefix with the previous one, whether it extends it."""
    prompts = [rendered(b) for b in bodies]
    for i, (body, prompt) in enumerate(zip(bodies, prompts, strict=True)):
        prev = prompts[i - 1] if i else ""
        common = next((k for k, (a, b) in enumerate(zip(prev, prompt, strict=False)) if a != b),
                      min(len(prev), len(prompt)))
        extends = i > 0 and body["messages"][: len(bodies[i - 1]["messages"])] == bodies[i - 1]["messages"]
        kind = "summary" if body.get("tool_choice") == "none" else ""
        print(f"{i:3} {len(prompt) // 4:7,} common {common // 4:7,} {'extends' if extends else 'BREAK':7} {kind}")


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


def script(turns: int, write_kb: int | None) -> list[Any]:
    """The scripted replies: 8 KB bash results every turn; or (write-heavy) three `write`s of `write_kb` KB
    of text, then a small `bash`, repeated."""
    if write_kb is None:
        return [reply(calls=[("bash", {"command": f"head -c 6000 /dev/urandom | base64 -w 100; echo turn{i}"})])
                for i in range(turns)] + [reply("done")]
    rng = random.Random(7)
    words = ["value", "result", "return", "index", "count", "items", "total", "self", "data", "name"]
    steps = []
    for i in range(turns):
        if i % 4 == 3:
            steps.append(reply(calls=[("bash", {"command": f"ls src | wc -l; echo turn{i}"})]))
            continue
        lines, size = [], 0
        while size < write_kb * 1024:
            line = f"    {rng.choice(words)}_{i} = " + " + ".join(rng.choices(words, k=8)) + "\n"
            lines.append(line)
            size += len(line)
        steps.append(reply(calls=[("write", {"path": f"src/m{i:03d}.py", "content": "".join(lines)})]))
    return [*steps, reply("done")]


def written(run_dir: Path) -> dict[str, Any]:
    """What the run did about its window: summaries (before → after), history snapshots, its ending."""
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    summaries = [(e["before_tokens"], e["after_tokens"]) for e in events
                 if e["type"] == "compaction" and e["stage"] in ("summarize", "summarize_failed")]
    return {"summaries": summaries, "snapshots": len(list((run_dir / "history").glob("*.json")))}


def main() -> int:  # long: one benchmark, set up, run and printed in order
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=None, help="turns (default 80; write-heavy 40)")
    parser.add_argument("--window", type=int, default=32768)
    parser.add_argument("--agents-md", type=int, default=0, metavar="BYTES", help="an AGENTS.md of this size")
    parser.add_argument("--write-heavy", action="store_true", help="a session made mostly of large writes")
    parser.add_argument("--write-kb", type=int, default=12, help="the size of each write (write-heavy)")
    parser.add_argument("--trace", action="store_true", help="one line per request: tokens, cached, extends")
    args = parser.parse_args()
    args.turns = args.turns or (40 if args.write_heavy else 80)
    with tempfile.TemporaryDirectory() as tmp, FakeOpenAI() as server:
        ws = Path(tmp)
        (ws / "task.md").write_text("Collect the random blocks, one per turn.\n")
        if args.agents_md:
            line = "- Keep each change small; run the tests before you finish; prefer the standard library.\n"
            (ws / "AGENTS.md").write_text((line * (args.agents_md // len(line) + 1))[: args.agents_md])
        server.add(*script(args.turns, args.write_kb if args.write_heavy else None))
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY="bench")
        # 80 calls is past the default call budget (60): this session is long on purpose.
        (ws / "policy.jsonc").write_text('{"extends": "default", "doomLoop": {"maxToolCalls": 1000}}')
        proc = subprocess.run([*agent_run_argv(), "--context-window", str(args.window), "--approve", "bash:shell:*",
                               "--policy", "policy.jsonc",
                               "--max-turns", str(args.turns + 5), "-q", "--output-format", "json", "task.md"],
                              cwd=ws, env=env, capture_output=True, text=True, timeout=600)
        summary = json.loads(proc.stdout)
        ours = measure(server.requests)
        facts = written(Path(summary["run_dir"]))
        if args.trace:
            trace(server.requests)
        conversation, ends = unpruned(Path(summary["run_dir"]), server.requests[0])
        naive = measure(sliding_window(conversation, ends, server.requests[0].get("tools") or [], args.window))
    extra = f", AGENTS.md {args.agents_md:,} bytes" if args.agents_md else ""
    kind = f"write-heavy ({args.write_kb} KB writes)" if args.write_heavy else "8 KB results"
    print(f"context benchmark: {args.turns} turns, {kind}, window {args.window:,} tokens{extra}; "
          f"exit {proc.returncode} ({summary.get('status')}: {summary.get('reason')})")
    print(f"{'':24}{'agent-run':>14}{'sliding window':>16}")
    rows = [("requests", "requests", "{:,.0f}"), ("largest request (tok)", "largest", "{:,.0f}"),
            ("prompt tokens", "prompt_tokens", "{:,.0f}"), ("cached tokens", "cached_tokens", "{:,.0f}"),
            ("effective cost (tok)", "effective", "{:,.0f}"), ("cache-hit ratio", "cache_hit", "{:.3f}"),
            ("prefix stability", "stability", "{:.3f}"), ("summarize steps", "summaries", "{:,.0f}")]
    for label, key, fmt in rows:
        print(f"{label:24}{fmt.format(ours[key]):>14}{fmt.format(naive[key]):>16}")
    usable = args.window - min(4096, int(0.2 * args.window))
    print(f"peak request {ours['largest']:,} tokens against the usable window {usable:,}: "
          f"{'under' if ours['largest'] <= usable else 'OVER'}; "
          f"stage counts {summary.get('metrics', {}).get('pruning_stage_counts')}")
    shrunk = ", ".join(f"{a:,}→{b:,}" for a, b in facts["summaries"])
    print(f"summaries (before→after tokens): {shrunk or 'none'}; history snapshots: {facts['snapshots']}")
    return 0 if proc.returncode == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
