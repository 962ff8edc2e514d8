"""What compaction costs at the provider's prompt cache, through the CLI and the scripted server: the compaction
call is the request before it plus its prompt (all cached but the prompt)."""

from __future__ import annotations

from tests.fakes.openai_server import reply

THINK = "I think " * 750  # 6 KB of reasoning a turn: stage 2 cannot clear it, only a summary can


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

