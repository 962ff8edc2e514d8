"""Guards through the real CLI: loops end with exit 4, budgets with exit 5, each with a
summary that says which guard, the count or figures, and the call."""

from __future__ import annotations

import json

from tests.fakes.openai_server import reply


def _reads(*paths):
    return [reply(calls=[("read", {"path": p})]) for p in paths]


def test_same_call_loop_exit_4_with_warning_at_half(fake, workspace, agent_run):
    (workspace / "a.txt").write_text("same\n")
    fake.add(*_reads(*["a.txt"] * 8), reply("never"))
    r = agent_run("task.md")
    assert r.code == 4, r.stderr
    s = r.summary
    assert s["status"] == "doom_loop"
    assert s["loop"] == {"detector": "same_call", "count": 5, "threshold": 5, "call": 'read {"path": "a.txt"}'}
    assert len(r.of_type("tool_call")) == 5 and len(fake.requests) == 5
    third = fake.requests[3]["messages"][-1]["content"]
    assert "[agent-run warning: possible loop: the same call with the same result 3 times" in third
    assert "warning" not in fake.requests[2]["messages"][-1]["content"]
    assert [e["detector"] for e in r.of_type("loop_warning")] == ["same_call"]


def test_failing_retries_exit_4(fake, workspace, agent_run):
    fake.add(*_reads(*["missing.txt"] * 5), reply("never"))
    r = agent_run("task.md")
    assert r.code == 4 and r.summary["loop"]["detector"] == "failing_retries"
    assert len(r.of_type("tool_call")) == 3


def test_ping_pong_exit_4_at_threshold(fake, workspace, agent_run):
    (workspace / "a.txt").write_text("a")
    (workspace / "b.txt").write_text("b")
    fake.add(*_reads(*["a.txt", "b.txt"] * 8), reply("never"))
    r = agent_run("task.md")
    assert r.code == 4 and r.summary["loop"]["detector"] == "ping_pong"
    assert len(r.of_type("tool_call")) == 10


def test_no_progress_catches_an_interleaved_loop(fake, workspace, agent_run):
    (workspace / "a.txt").write_text("same\n")
    for i in range(12):
        (workspace / f"x{i}.txt").write_text(f"new {i}\n")
    paths = [p for i in range(12) for p in ("a.txt", f"x{i}.txt")]
    fake.add(*_reads(*paths), reply("never"))
    r = agent_run("task.md")
    assert r.code == 4 and r.summary["loop"]["detector"] == "no_progress"
    assert len(r.of_type("tool_call")) == 19  # a.txt's 10th read, not one call before


def test_circuit_breaker_on_a_cycle(fake, workspace, agent_run):
    for name in "abcd":
        (workspace / f"{name}.txt").write_text(name)
    fake.add(*_reads(*[f"{c}.txt" for c in "abcd" * 10]), reply("never"))
    r = agent_run("task.md")
    assert r.code == 4 and r.summary["loop"]["detector"] == "circuit_breaker"
    assert len(r.of_type("tool_call")) == 34  # 4 new results, then 30 calls that produce nothing new


def test_a_poll_whose_result_changes_passes(fake, workspace, agent_run):
    # The same call twelve times, past every repeat threshold; its result changes each time.
    poll = [reply(calls=[("bash", {"command": "date +%s%N"})]) for _ in range(12)]
    fake.add(*poll, reply("done polling"))
    r = agent_run("--approve", "bash:shell:date *", "task.md")
    assert r.code == 0, r.summary
    assert len(r.of_type("tool_call")) == 12
    assert len({e["sha256"] for e in r.of_type("tool_result")}) == 12


def test_thirty_distinct_calls_pass(fake, workspace, agent_run):
    for i in range(30):
        (workspace / f"f{i}.txt").write_text(f"content {i}\n")
    fake.add(*_reads(*[f"f{i}.txt" for i in range(30)]), reply("read them all"))
    r = agent_run("task.md")
    assert r.code == 0, r.summary
    assert len(r.of_type("tool_call")) == 30


def test_policy_sets_the_thresholds(fake, workspace, agent_run):
    (workspace / "p.jsonc").write_text('{"extends": "default", "doomLoop": {"maxToolCalls": 4}}')
    for i in range(6):
        (workspace / f"f{i}.txt").write_text(str(i))
    fake.add(*_reads(*[f"f{i}.txt" for i in range(6)]), reply("never"))
    r = agent_run("--policy", "p.jsonc", "task.md")
    assert r.code == 4 and r.summary["loop"]["detector"] == "call_budget"
    assert len(r.of_type("tool_call")) == 4


def test_max_tokens_is_checked_before_the_request(fake, workspace, agent_run):
    big = {"prompt_tokens": 5000, "completion_tokens": 100, "total_tokens": 5100}
    fake.add(reply(calls=[("list", {})], usage=big), reply("never"))
    r = agent_run("--max-tokens", "5500", "task.md")
    assert r.code == 5, r.stderr
    b = r.summary["budget"]
    assert (b["name"], b["limit"], b["used"]) == ("max_tokens", 5500, 5100)
    assert b["next_request_estimate"] > 400
    assert len(fake.requests) == 1


def test_max_cost_is_checked_before_the_request(fake, workspace, agent_run):
    usage = {"prompt_tokens": 1_000_000, "completion_tokens": 0, "total_tokens": 1_000_000}
    fake.add(reply(calls=[("list", {})], usage=usage), reply("never"))
    r = agent_run("--model", "gpt-4o-mini", "--max-cost-usd", "0.1", "task.md")
    assert r.code == 5
    b = r.summary["budget"]
    assert (b["name"], b["limit"], b["used"]) == ("max_cost_usd", 0.1, 0.15)
    assert r.summary["usage"]["cost_usd"] == 0.15
    assert len(fake.requests) == 1


def test_policy_prices_extend_the_table(fake, workspace, agent_run):
    (workspace / "p.jsonc").write_text(json.dumps({"extends": "default", "budget": {
        "maxCostUsd": 0.0025, "prices": {"local-llm": {"input": 1.0, "output": 2.0}}}}))
    usage = {"prompt_tokens": 2000, "completion_tokens": 0, "total_tokens": 2000}
    fake.add(reply(calls=[("list", {})], usage=usage), reply("never"))
    r = agent_run("--policy", "p.jsonc", "--model", "local-llm", "task.md")
    assert r.code == 5 and r.summary["budget"]["used"] == 0.002


def test_cost_budget_without_a_price_is_a_usage_error(fake, workspace, agent_run):
    r = agent_run("--model", "mystery-model", "--max-cost-usd", "1", "task.md")
    assert r.code == 2 and "budget.prices" in r.summary["reason"]
    assert fake.requests == []


def test_context_floor(fake, workspace, agent_run):
    r = agent_run("--model", "gpt-4", "task.md")
    assert r.code == 2 and "context window" in r.summary["reason"] and fake.requests == []
    fake.add(reply("fine"))
    r = agent_run("--model", "local", "--context-window", "20000", "task.md")
    assert r.code == 0 and "small context window (20000 tokens, from --context-window)" in r.stderr
    assert "from genai-prices' model database" in agent_run("--model", "gpt-4", "task.md").summary["reason"]


def test_cleanup_command(fake, workspace, agent_run):
    import os
    import time

    fake.add(reply("one"))
    first = agent_run("task.md")
    t = time.time() - 30 * 86400
    os.utime(first.run_dir / "summary.json", (t, t))
    fake.add(reply("two"))
    second = agent_run("task.md")
    dry = agent_run("cleanup", "--older-than", "7d", "--dry-run")
    assert dry.code == 0 and dry.stdout.strip() == str(first.run_dir) and first.run_dir.exists()
    done = agent_run("cleanup", "--older-than", "7d")
    assert done.code == 0 and not first.run_dir.exists() and second.run_dir.exists()
    assert agent_run("cleanup", "--older-than", "soon").code == 2
