"""A context that holds under pressure (issue 29), through the CLI and the scripted server: skills reach the
model whole in every later request, a write-heavy session never sends a request over the usable window (the
server refuses one as OpenAI does), a window that cannot be kept ends the run with exit 5, and a skill too
large to fit is refused with an error the model can act on."""

from __future__ import annotations

import json
import random
from pathlib import Path

from tests.fakes.openai_server import prompt_tokens, reply

LATE = 13  # turns before the second skill
BIG = "yes " + "a" * 99 + " | head -n 60; echo turn{n}"  # 6 KB in 60 lines


def _skill(workspace: Path, name: str, size: int) -> str:
    """A SKILL.md whose body is `size` bytes of numbered instruction lines; returns the body."""
    line = "Step {i:03d}: check the {name} rule, then record what you found in the notes before going on.\n"
    lines, n = [], 0
    while n < size:
        lines.append(line.format(i=len(lines), name=name))
        n += len(lines[-1])
    body = "".join(lines).strip()
    folder = workspace / ".agents" / "skills" / name
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: The {name} procedure.\n---\n{body}\n")
    return body


def _texts(body: dict) -> list[str]:
    return [m["content"] for m in body["messages"] if isinstance(m.get("content"), str)]


def test_skills_loaded_early_and_at_62_percent_reach_the_model_whole(fake, workspace, agent_run):
    early, late = _skill(workspace, "early", 20_000), _skill(workspace, "late", 20_000)
    fake.context_window = 32768
    # Long reasoning each turn, which stage 2 cannot clear: the context passes half full before a summary.
    bash = [reply("I think " * 250, calls=[("bash", {"command": BIG.format(n=i)})]) for i in range(24)]
    fake.add(reply(calls=[("skill", {"name": "early"})]), *bash[:LATE], reply(calls=[("skill", {"name": "late"})]),
             *bash[LATE:], reply("done"))
    # A cold prompt cache (ttl 0): stage 3 at summarizeAt, not delayed to emergencyAt, so the second skill arrives
    # between the two.
    r = agent_run("--context-window", "32768", "--compaction-cache-ttl", "0", "--approve", "bash:shell:*", "task.md",
                  timeout=180)
    assert r.code == 0, r.summary
    sent = [b for b in fake.requests if b.get("tool_choice") != "none"]
    for i, body in enumerate(sent):
        texts = _texts(body)
        assert (i < 1 or any(early in t for t in texts)) and (i <= LATE + 1 or any(late in t for t in texts)), i
    stages = [e["stage"] for e in r.of_type("compaction")]
    assert "summarize" in stages  # what came before was summarized: the skills were not
    usable = 32768 - 4096
    requests = r.of_type("model_request")
    loaded = [e["turn"] for e in r.of_type("tool_call") if e["tool"] == "skill"]
    at = next(e["estimated_tokens"] for e in requests if e["turn"] == loaded[1]) / usable
    assert 0.55 <= at <= 0.7, at  # the second skill arrives with the context past half full
    assert all(prompt_tokens(b) <= usable for b in fake.requests)
    assert r.summary["metrics"]["peak_context_utilization"] < 1.0


def _writes(turns: int, kb: int) -> list:
    rng = random.Random(7)
    words = ["value", "result", "return", "index", "count", "items", "total", "self", "data", "name"]
    steps = []
    for i in range(turns):
        if i % 4 == 3:
            steps.append(reply(calls=[("bash", {"command": f"ls src | wc -l; echo turn{i}"})]))
            continue
        text = "".join(f"    {rng.choice(words)}_{i} = " + " + ".join(rng.choices(words, k=8)) + "\n"
                       for _ in range(kb * 1024 // 70))
        steps.append(reply(calls=[("write", {"path": f"src/m{i:03d}.py", "content": text})]))
    return [*steps, reply("done")]


def test_a_write_heavy_session_in_16k_never_sends_a_request_over_the_usable_window(fake, workspace, agent_run):
    fake.context_window = 16384  # refuses what a real 16K server would
    fake.add(*_writes(16, 12))
    r = agent_run("--context-window", "16384", "--approve", "bash:shell:*", "task.md", timeout=180)
    assert r.code == 0, r.summary
    usable = 16384 - 3276
    received = [prompt_tokens(b) for b in fake.requests]
    assert len(received) >= 17 and max(received) <= usable, received
    assert max(e["estimated_tokens"] for e in r.of_type("model_request")) <= usable
    # The written contents are kept by reference (path + hash), not by value.
    last = json.dumps(fake.requests[-1]["messages"])
    assert "sha256:" in last and "full call: " in last and last.count("    value_") < 200
    summaries = [e for e in r.of_type("compaction") if e["stage"] == "summarize"]
    assert all(e["after_tokens"] < 0.9 * e["before_tokens"] for e in summaries)  # none repeated for nothing
    requests = r.of_type("model_request")
    snapshots = list((r.run_dir / "history").glob("*.json"))
    assert len(snapshots) <= 1 + sum(not e["extends_previous"] for e in requests) + len(summaries)


def test_a_window_that_cannot_be_kept_ends_the_run_with_exit_5(fake, workspace, agent_run):
    fake.context_window = 16384
    thinking = "I will look at this carefully. " * 600  # 18 KB of reasoning per turn: nothing clears it
    fake.add(*[reply(thinking, calls=[("bash", {"command": f"echo {i}"})]) for i in range(4)], reply("done"))
    r = agent_run("--context-window", "16384", "--approve", "bash:shell:*", "task.md", timeout=180)
    assert r.code == 5, r.summary
    assert r.summary["status"] == "budget_exhausted" and r.summary["budget"]["name"] == "context_window"
    reason = r.summary["reason"]
    assert "16,384-token context window" in reason and "13,108 usable" in reason and "tokens, over" in reason
    assert all(prompt_tokens(b) <= 16384 - 3276 for b in fake.requests)  # the request over it was never sent
    assert r.of_type("run_finished")[-1]["exit_code"] == 5


def test_a_skill_too_large_to_fit_is_refused_with_an_error_the_model_can_act_on(fake, workspace, agent_run):
    body = _skill(workspace, "huge", 48_000)
    fake.context_window = 16384
    fake.add(reply(calls=[("skill", {"name": "huge"})]), reply("done without it"))
    r = agent_run("--context-window", "16384", "task.md", timeout=180)
    assert r.code == 0, r.summary
    result = r.of_type("tool_result")[0]
    assert not result["ok"] and result["error_type"] == "ContextFull"
    error = json.loads(fake.requests[1]["messages"][-1]["content"])["error"]
    assert "cannot fit whole" in error["message"] and "Nothing was cut" in error["message"]
    assert body in Path(error["path"]).read_text()  # the whole text is kept where the error says
    assert all(prompt_tokens(b) <= 16384 - 3276 for b in fake.requests)


def test_a_subagents_answer_reaches_the_parent_whole_in_every_later_request(fake, workspace, agent_run):
    child = "CHILD-SUBTASK"
    answer = "".join(f"Finding {i:03d}: module {i} keeps its state in a global; pass it explicitly.\n"
                     for i in range(160)).strip()  # ~12 KB
    (workspace / "p.jsonc").write_text('{"extends": "default", "risk": {"rules": [{"domain": "task", "pattern": '
                                       '"agent:**", "level": "medium"}]}, "permission": {"rules": [{"domain": "task", '
                                       '"pattern": "agent:**", "decision": "allow"}]}}')
    fake.context_window = 32768
    fake.route(child, reply(answer))
    bash = [reply("I think " * 250, calls=[("bash", {"command": BIG.format(n=i)})]) for i in range(20)]
    fake.add(reply(calls=[("task", {"description": "survey", "prompt": f"{child}: survey the modules"})]),
             *bash, reply("done"))
    r = agent_run("--context-window", "32768", "--approve", "bash:shell:*", "--policy", "p.jsonc", "task.md",
                  timeout=180)
    assert r.code == 0, r.summary
    assert "summarize" in [e["stage"] for e in r.of_type("compaction") if e.get("agent") is None]
    parent = [b for b in fake.requests if b.get("tool_choice") != "none" and child not in b["messages"][1]["content"]]
    assert len(parent) == 22
    for i, body in enumerate(parent[1:]):
        assert any(answer in t for t in _texts(body)), i
    assert all(prompt_tokens(b) <= 32768 - 4096 for b in fake.requests)
