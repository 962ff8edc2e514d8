"""Context economy through the CLI: stages fire, the prefix stays stable between them,
summaries are snapshotted, nothing pruned is lost to memory_search."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from tests.fakes.openai_server import error, reply

BIG = "yes " + "a" * 99 + " | head -n 60; echo turn{n}"  # 6 KB in 60 lines


def _turns(n: int, then=None, thinking: int = 0):
    # `thinking`: long assistant text, which stage 2 does not clear, so only a summary can shrink it.
    steps = [reply(("I think " * (thinking // 8)) or None, calls=[("bash", {"command": BIG.format(n=i)})])
             for i in range(n)]
    return [*steps, *(then or [reply("done")])]


def test_stages_fire_and_the_run_finishes(fake, workspace, agent_run):
    fake.add(*_turns(30, thinking=6000))
    r = agent_run("--context-window", "40000", "--approve", "bash:shell:*", "task.md", timeout=120)
    assert r.code == 0, r.summary
    stages = [e["stage"] for e in r.of_type("compaction")]
    # Long assistant text is not something stage 2 can clear: stage 3 takes over, in batches.
    assert "summarize" in stages and len(stages) <= 30 // 3
    m = r.summary["metrics"]
    assert m["pruning_stage_counts"]["soft_trim"] > 0 and m["pruning_stage_counts"]["summarize"] >= 1
    assert 0 < m["peak_context_utilization"] < 1.0
    assert fake.compactions >= 1
    # Every request fits the usable window.
    assert max(e["estimated_tokens"] for e in r.of_type("model_request")) <= 36_000
    # Between pruning steps the prompt only grows: most requests extend the previous one.
    assert m["prefix_stability_ratio"] >= 0.6
    history = sorted((r.run_dir / "history").iterdir())
    assert history and json.loads(history[0].read_text())[0]["role"] == "system"
    prefix = {e["prefix_hash"] for e in r.of_type("model_request")}
    assert len(prefix) == 1  # tools, system prompt and task never change


def test_soft_trim_keeps_the_full_output(fake, workspace, agent_run):
    fake.add(*_turns(8))
    r = agent_run("--context-window", "20000", "--approve", "bash:shell:*", "task.md", timeout=120)
    assert r.code == 0
    trimmed = [e for e in r.of_type("tool_result") if "trimmed as the context grew" in e["content"]]
    assert trimmed
    path = trimmed[0]["content"].split("full output: ")[1].split(" …]")[0]
    full = Path(path).read_text()
    assert full.count("\n") > 60 and "turn" in full


def test_memory_search_finds_a_cleared_output(fake, workspace, agent_run):
    fake.add(*_turns(14, then=[reply(calls=[("memory_search", {"query": "turn1"})]), reply("found it")]))
    r = agent_run("--context-window", "20000", "--approve", "bash:shell:*", "task.md", timeout=120)
    assert r.code == 0, r.summary
    assert any(e["stage"] == "hard_clear" for e in r.of_type("compaction"))
    result = r.of_type("tool_result")[-1]
    assert result["tool"] == "memory_search" and result["ok"] and "turn1" in result["content"]


def test_a_failing_compaction_call_does_not_end_the_run(fake, workspace, agent_run):
    fake.summary = error(400)
    fake.add(*_turns(16, thinking=3000))
    r = agent_run("--context-window", "20000", "--approve", "bash:shell:*", "task.md", timeout=120)
    assert r.code == 0, r.summary
    assert "summarize_failed" in [e["stage"] for e in r.of_type("compaction")]


def test_a_run_of_large_writes_compacts_with_bounded_summaries_prompt_and_history(fake, workspace, agent_run):
    # Protected calls (write) whose arguments are large: the summary must not carry them by value,
    # a summary that frees too little must not be retried every turn, and history/ must stay small.
    turns, size = 40, 8000
    fake.add(*[reply(calls=[("write", {"path": f"src/f{i:02d}.txt", "content": f"{i:02d}" * (size // 2)})])
               for i in range(turns)], reply("done"))
    r = agent_run("--context-window", "32768", "task.md", timeout=180)
    assert r.code == 0, r.summary
    usable = 32768 - 4096
    requests = r.of_type("model_request")
    assert max(e["estimated_tokens"] for e in requests) <= usable  # the prompt stays bounded
    summaries = [e for e in r.of_type("compaction") if e["stage"] == "summarize"]
    assert fake.compactions <= turns // 4 and len(summaries) <= turns // 4  # not one summary every turn
    assert all(e["after_tokens"] < 0.55 * usable for e in summaries)  # each one frees room
    # The writes are kept by reference (spill file + hash), not copied into the summary.
    last_prompt = fake.requests[-1]["messages"]
    kept = [m["content"] for m in last_prompt if str(m.get("content") or "").startswith("[Session summary]")]
    lines = [line for c in kept for line in c.splitlines()]
    assert kept and all(len(line) < 700 for line in lines) and "01" * 500 not in "".join(kept)
    ref = re.search(r"(\S+/outputs/tool_\w+) sha256:([0-9a-f]+)", "\n".join(kept))
    assert ref and hashlib.sha256(Path(ref.group(1)).read_bytes()).hexdigest().startswith(ref.group(2))
    # history/: every message stored once, whatever the number of snapshots.
    history = r.run_dir / "history"
    stored = sum(p.stat().st_size for p in history.rglob("*") if p.is_file())
    assert stored < 2 * turns * size, stored
    for snap in [p for p in history.glob("*.json")]:
        assert json.loads(snap.read_text())[0]["role"] == "system"
