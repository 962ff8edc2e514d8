"""What subagents buy: the parent's context stays small when a subtask's reading is delegated (`task`).

Drives the real `agent-run` through the scripted OpenAI server on 127.0.0.1, twice on the same workspace of
N text files of KB kilobytes each, and measures at the server:
- A) inline: the parent reads every file itself, one `read` per turn, then answers;
- B) delegated: the parent makes `--children` `task` calls (one per turn, or all in one turn with `--together`);
  each child reads its share of the files, one `read` per turn, and answers with a ~300-character summary;
  then the parent answers.

Per scenario: requests (parent / children), the parent's largest request and its total prompt tokens, every
agent's total prompt tokens (tokens estimated as chars/4 of the canonical tools + messages, as
bench_context.py does), and the ratios B/A. `summary.json`'s `agents` is printed as a cross-check.

    python bench/bench_subagents.py [--files 16] [--kb 8] [--children 2] [--together]
"""

from __future__ import annotations

import argparse
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
from tests.fakes.openai_server import FakeOpenAI, Step, reply  # noqa: E402

WINDOW = 131072  # large enough that no request is pruned or summarized: the figures are the raw growth
WORDS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo", "lima",
         "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango", "uniform", "victor", "whiskey",
         "xray", "yankee", "zulu")


def marker(i: int) -> str:
    # Distinct per child so each has its own routed script; no marker is a substring of another.
    return f"<<SUBTASK-{i}>>"


def rendered(body: dict[str, Any]) -> str:
    """The prompt as a provider sees it: tools first, then the messages in order (as in bench_context.py)."""
    return canonical(body.get("tools") or []) + "".join(canonical(m) for m in body["messages"])


def tokens(body: dict[str, Any]) -> int:
    return len(rendered(body)) // 4


def owner(body: dict[str, Any], children: int) -> str:
    """'parent', or the child whose marker is in the first user message (a child's prompt)."""
    first_user = json.dumps(body["messages"][1:2])
    return next((f"child {i}" for i in range(children) if marker(i) in first_user), "parent")


def make_workspace(ws: Path, files: int, kb: int) -> list[str]:
    rng = random.Random(16)  # the same text for both scenarios and every run
    names = []
    for i in range(files):
        lines, size = [], 0
        while size < kb * 1024:
            line = " ".join(rng.choice(WORDS) for _ in range(12))
            lines.append(line)
            size += len(line) + 1
        name = f"notes/part{i:03}.txt"
        (ws / name).parent.mkdir(parents=True, exist_ok=True)
        (ws / name).write_text("\n".join(lines) + "\n")
        names.append(name)
    (ws / "task.md").write_text("Read every file under notes/ and report how often each word occurs.\n")
    return names


def summary_text(i: int, names: list[str]) -> str:
    text = (f"Child {i} read {len(names)} files ({names[0]} .. {names[-1]}). Each holds twelve-word lines drawn "
            "from the NATO alphabet; the counts are roughly uniform, every word between 3.5% and 4.2% of the "
            "total, no file is empty, no line is malformed, and nothing else is in them. ")
    return (text * 2)[:300]


def script(server: FakeOpenAI, names: list[str], delegated: bool, children: int, together: bool) -> None:
    if not delegated:
        server.add(*[reply(calls=[("read", {"path": n})]) for n in names], reply("inline: all files read"))
        return
    shares = [names[i::children] for i in range(children)]
    calls = [("task", {"description": f"read share {i}", "agent": "general",
                       "prompt": f"{marker(i)}: read {', '.join(share)} and summarise the word counts in 300 "
                                 "characters"}) for i, share in enumerate(shares)]
    steps: list[Step] = [reply(calls=calls)] if together else [reply(calls=[c]) for c in calls]
    server.add(*steps, reply("delegated: every child reported"))
    for i, share in enumerate(shares):
        server.route(marker(i), *[reply(calls=[("read", {"path": n})]) for n in share],
                     reply(summary_text(i, share)))


def run(args: argparse.Namespace, delegated: bool) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp, FakeOpenAI() as server:
        ws = Path(tmp)
        names = make_workspace(ws, args.files, args.kb)
        script(server, names, delegated, args.children, args.together)
        # Past the default guards on purpose when --files is large: the scenario, not a guard, should end the run.
        (ws / "policy.jsonc").write_text(json.dumps({
            "extends": "default", "doomLoop": {"maxToolCalls": 10 * args.files + 100},
            "subagents": {"maxTurns": args.files + 10},
            "risk": {"rules": [{"domain": "task", "pattern": "agent:**", "level": "medium"}]},  # delegating on purpose
            "permission": {"rules": [{"domain": "task", "pattern": "agent:**", "decision": "allow"}]}}))
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY="bench")
        proc = subprocess.run([*agent_run_argv(), "--context-window", str(WINDOW), "--policy", "policy.jsonc",
                               "--max-turns", str(2 * args.files + 2 * args.children + 10), "-q",
                               "--output-format", "json", "task.md"],
                              cwd=ws, env=env, capture_output=True, text=True, timeout=300)
        try:
            summary = json.loads(proc.stdout)
        except json.JSONDecodeError:
            summary = {}
        if proc.returncode != 0:
            print(f"warning: exit {proc.returncode}: {proc.stderr.strip()[-500:]}", file=sys.stderr)
        bodies = list(server.requests)
        compactions = server.compactions
    parent = [tokens(b) for b in bodies if owner(b, args.children) == "parent"]
    every = [tokens(b) for b in bodies]
    return {"exit": proc.returncode, "requests_parent": len(parent), "requests_children": len(every) - len(parent),
            "parent_largest": max(parent, default=0), "parent_total": sum(parent), "all_total": sum(every),
            "compactions": compactions, "agents": summary.get("agents") or [],
            "stages": summary.get("metrics", {}).get("pruning_stage_counts")}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=16)
    parser.add_argument("--kb", type=int, default=8, help="size of each file")
    parser.add_argument("--children", type=int, default=2, help="task calls in scenario B")
    parser.add_argument("--together", action="store_true", help="B's task calls all in one turn")
    args = parser.parse_args()
    a, b = run(args, delegated=False), run(args, delegated=True)
    how = "in one turn" if args.together else "one per turn"
    print(f"subagents benchmark: {args.files} files of {args.kb} KB; B = {args.children} task calls {how}; "
          f"window {WINDOW:,} (no compaction: {a['compactions']} / {b['compactions']} summarize steps); "
          f"exit {a['exit']} / {b['exit']}")
    print(f"pruning stage counts: A {a['stages']}, B {b['stages']}")
    print(f"{'':30}{'A inline':>12}{'B delegated':>14}{'B/A':>8}")
    rows = [("requests (parent)", "requests_parent"), ("requests (children)", "requests_children"),
            ("parent largest request (tok)", "parent_largest"), ("parent prompt tokens", "parent_total"),
            ("all agents' prompt tokens", "all_total")]
    for label, key in rows:
        ratio = f"{b[key] / a[key]:.3f}" if a[key] else "-"
        print(f"{label:30}{a[key]:>12,}{b[key]:>14,}{ratio:>8}")
    # The scripted server reports synthetic usage (100 tokens × the conversation's turn): the figures above
    # are the measured ones; this only shows that summary.json accounts for every agent.
    for name, res in (("A", a), ("B", b)):
        for agent in res["agents"]:
            usage = agent.get("usage") or {}
            print(f"summary.json {name}: {agent['id']:5} {agent.get('name') or '':8} status={agent.get('status')} "
                  f"turns={agent.get('turns')} tool_calls={agent.get('tool_calls')} "
                  f"usage prompt={usage.get('prompt_tokens')} completion={usage.get('completion_tokens')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
