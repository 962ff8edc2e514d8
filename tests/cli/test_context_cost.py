"""What compaction costs at the provider's prompt cache, through the CLI and the scripted server: the compaction
call is the request before it plus its prompt (all cached but the prompt), and a large result enters trimmed when
the run's pace would take the context to stage 1 while it is recent (no whole result for a prefix break to remove)."""

from __future__ import annotations

from pathlib import Path

from tests.fakes.openai_server import reply

THINK = "I think " * 750  # 6 KB of reasoning a turn: stage 2 cannot clear it, only a summary can
LINES = "seq 100000 101599; echo turn{n}"  # 11 KB in 1,601 lines


def test_the_compaction_call_extends_the_request_before_it_and_the_latest_turn_stays_verbatim(
        fake, workspace, agent_run):
    fake.add(*[reply(THINK, calls=[("bash", {"command": f"echo turn{i}"})]) for i in range(12)], reply("done"))
    r = agent_run("--context-window", "20000", "--compaction-cache-ttl", "0", "--approve", "bash:shell:*", "task.md")
    assert r.code == 0, r.summary
    i = next(i for i, body in enumerate(fake.requests) if body.get("tool_choice") == "none")
    before, asked, after = fake.requests[i - 1], fake.requests[i], fake.requests[i + 1]
    assert asked["messages"][:-1] == before["messages"]  # cached whole, but for the compaction prompt
    assert asked["messages"][-1]["content"].startswith("Context is running out")
    # The turn the summary did not see is kept as it was, after the summary.
    fresh = [m for m in after["messages"] if m not in before["messages"]]
    assert [m["role"] for m in fresh] == ["user", "assistant", "tool"], fresh
    assert fresh[0]["content"].startswith("[Session summary]") and fresh[1]["tool_calls"]


def test_a_large_result_enters_trimmed_when_the_runs_pace_takes_the_context_to_stage_1_while_it_is_recent(
        fake, workspace, agent_run):
    fake.add(*[reply(calls=[("bash", {"command": LINES.format(n=i)})]) for i in range(2)], reply("done"))
    r = agent_run("--context-window", "32768", "--approve", "bash:shell:*", "task.md")
    assert r.code == 0, r.summary
    first, second = (e["content"] for e in r.of_type("tool_result"))
    assert "trimmed as the context grew" not in first  # no pace before the first turn, and far under 30%
    assert "trimmed as the context grew" in second
    whole = Path(second.split("full output: ")[1].split(" …]")[0]).read_text()
    assert whole.count("\n") >= 1600 and "turn1" in whole  # nothing lost
    # Under 30% of the usable window (28,672) even with it whole: the context as it came in, and the result.
    entered = r.of_type("model_request")[1]["estimated_tokens"] + len(whole) // 4
    assert entered < 0.3 * 28_672, entered
    assert not r.of_type("compaction")
