"""Compaction the operator steers (issue 46 item 1), through the CLI and the scripted server: an off switch, a
message-count trigger and an explicit one on resume, a cache-aware stage 3, graded retention and a tokenizer."""

from __future__ import annotations

import json

from tests.fakes.openai_server import NO_USAGE, prompt_tokens, reply

THINK = "I think " * 750  # 6 KB of reasoning a turn: stage 2 cannot clear it, only a summary can


def _bash(n: int, thinking: str = THINK) -> list:
    return [reply(thinking, calls=[("bash", {"command": f"echo turn{i}"})]) for i in range(n)]


def test_no_compaction_never_asks_for_a_summary(fake, workspace, agent_run):
    fake.context_window = 20000
    fake.add(*_bash(16), reply("done"))
    r = agent_run("--context-window", "20000", "--no-compaction", "--approve", "bash:shell:*", "task.md")
    assert r.code == 0, r.summary
    assert fake.compactions == 0 and {e["stage"] for e in r.of_type("compaction")} == {"hard_clear"}
    assert all(prompt_tokens(b) <= 20000 - 4000 for b in fake.requests)


def test_compaction_disabled_in_the_policy_ends_exit_5_at_the_window(fake, workspace, agent_run):
    (workspace / "p.jsonc").write_text('{"extends": "default", "compaction": {"enabled": false}}')
    fake.context_window = 16384
    fake.add(*_bash(4, "I will look at this carefully. " * 600), reply("done"))
    r = agent_run("--context-window", "16384", "--policy", "p.jsonc", "--approve", "bash:shell:*", "task.md")
    assert r.code == 5, r.summary
    assert r.summary["budget"]["name"] == "context_window" and fake.compactions == 0


def _asked(fake) -> list[dict]:
    return [b for b in fake.requests if b.get("tool_choice") != "none"]


def test_max_messages_summarizes_by_count_with_the_window_far_away(fake, workspace, agent_run):
    (workspace / "p.jsonc").write_text('{"extends": "default", "compaction": {"maxMessages": 12}}')
    fake.add(*_bash(10, "checking"), reply("done"))
    r = agent_run("--policy", "p.jsonc", "--approve", "bash:shell:*", "task.md")
    assert r.code == 0, r.summary
    summaries = [e for e in r.of_type("compaction") if e["stage"] == "summarize"]
    assert summaries and {e["trigger"] for e in summaries} == {"messages"} and fake.compactions == len(summaries)
    assert max(len(b["messages"]) for b in _asked(fake)) <= 12
    assert max(e["estimated_tokens"] for e in r.of_type("model_request")) < 5000  # not the token share


def test_resume_compact_summarizes_before_continuing(fake, workspace, agent_run):
    fake.add(*_bash(6, "checking"), reply("done"))
    first = agent_run("--approve", "bash:shell:*", "task.md")
    assert first.code == 0 and fake.compactions == 0
    fake.add(reply("went on"))
    r = agent_run("resume", str(first.run_dir), "--compact", "--approve", "bash:shell:*", "go on")
    assert r.code == 0, r.summary
    assert fake.compactions == 1 and fake.requests[-2].get("tool_choice") == "none"
    [event] = r.of_type("compaction")
    assert event["stage"] == "summarize" and event["trigger"] == "operator"
    sent = fake.requests[-1]["messages"]
    assert any("[Session summary]" in str(m.get("content")) for m in sent) and sent[-1]["content"].endswith("go on")
    assert len(sent) < len(fake.requests[-2]["messages"])


def _writes(n: int) -> list:
    # Long reasoning and small writes: nothing stage 2 can clear, so no summary comes before summarizeAt (70%).
    return [reply(THINK, calls=[("write", {"path": f"n{i:02d}.txt", "content": "x"})]) for i in range(n)]


def test_a_warm_cache_delays_the_summary_to_the_emergency_threshold_never_past_it(fake, workspace, agent_run):
    usable = 24000 - 4096
    fake.add(*_writes(14), reply("done"))  # the server reports cached prompt tokens on every response
    warm = agent_run("--context-window", "24000", "task.md")
    assert warm.code == 0, warm.summary
    first = next(e for e in warm.of_type("compaction") if e["stage"] == "summarize")
    assert first["delayed_for_cache"] > 0 and first["before_tokens"] >= 0.95 * usable
    assert max(e["estimated_tokens"] for e in warm.of_type("model_request")) < 0.95 * usable
    fake.add(*_writes(14), reply("done"))
    cold = agent_run("--context-window", "24000", "--compaction-cache-ttl", "0", "task.md")
    assert cold.code == 0, cold.summary
    first = next(e for e in cold.of_type("compaction") if e["stage"] == "summarize")
    assert first["delayed_for_cache"] == 0 and 0.7 * usable <= first["before_tokens"] < 0.8 * usable


def test_errors_keep_their_lesson_through_stage_2_and_decisions_a_line_each_through_a_summary(
        fake, workspace, agent_run):
    for i in range(24):
        (workspace / f"big{i:02d}.txt").write_text("".join(f"line {n} of file {i}\n" for n in range(400)))
    reads = [reply(calls=[("read", {"path": f"big{i:02d}.txt"})]) for i in range(12)]
    thought = [reply("I think " * 400, calls=[("read", {"path": f"big{i:02d}.txt"})]) for i in range(12, 24)]
    fake.add(reply(calls=[("read", {"path": "missing.txt"})]), reply(calls=[("bash", {"command": "echo hi"})]),
             *reads, *thought, reply("done"))
    r = agent_run("--context-window", "20000", "--compaction-cache-ttl", "0", "task.md")
    stages = [e["stage"] for e in r.of_type("compaction")]
    assert stages[0] == "hard_clear" and "summarize" in stages, stages
    errors = [e for e in r.of_type("tool_result") if not e["ok"]]
    assert [e["tool"] for e in errors] == ["read", "bash"]
    message = json.loads(errors[0]["content"])["error"]["message"].splitlines()[0]
    placeholders = {m["content"] for b in fake.requests for m in b["messages"]
                    if m.get("role") == "tool" and m["content"].startswith("[tool output cleared: read")
                    and "missing.txt" in m["content"]}
    assert placeholders and all(message in p for p in placeholders), (message, placeholders)
    summary = next(m["content"] for m in fake.requests[-1]["messages"] if "[Session summary]" in str(m["content"]))
    decisions = summary.split("[Session summary]\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert decisions[0].startswith("Decisions and errors") and len(decisions) == 3, decisions
    assert "read" in decisions[1] and "missing.txt" in decisions[1]
    assert "bash" in decisions[2] and "ApprovalRequired" in decisions[2]


def _bytes_tokenizer(tmp_path) -> dict[str, str]:
    """One token per byte (no merges): four times the chars/4 estimate."""
    import base64

    ranks = tmp_path / "bytes.tiktoken"
    ranks.write_text("".join(f"{base64.b64encode(bytes([b])).decode()} {b}\n" for b in range(256)))
    return {"AGENT_RUN_TOKENIZER": f"tiktoken:{ranks}"}


def test_a_tiktoken_file_replaces_the_chars_per_4_estimate(fake, workspace, agent_run, tmp_path):
    fake.add(*_bash(8), reply("done"))
    r = agent_run("--context-window", "100000", "--approve", "bash:shell:*", "task.md", env=_bytes_tokenizer(tmp_path))
    assert r.code == 0, r.summary
    [first, *_] = r.of_type("compaction")
    sent = next(e["prompt_bytes"] for e in r.of_type("model_request") if e["turn"] == first["turn"])
    assert first["before_tokens"] > 3 * sent / 4  # the tokenizer's count, not chars/4: the context fills 4x as fast
    bad = agent_run("task.md", env={"AGENT_RUN_TOKENIZER": "tiktoken:/nonexistent.tiktoken"})
    assert bad.code == 2 and "AGENT_RUN_TOKENIZER" in bad.stderr


def test_the_event_and_the_token_budget_take_the_tokenizers_count(fake, workspace, agent_run, tmp_path):
    fake.add(reply("done"))
    [request] = agent_run("task.md", env=_bytes_tokenizer(tmp_path)).of_type("model_request")
    assert abs(request["estimated_tokens"] - request["prompt_bytes"]) < 64, request  # a token a byte
    fake.add(reply("done"))  # a budget a run under the tokenizer cannot afford, which chars/4 would
    r = agent_run("--max-tokens", str(request["prompt_bytes"] // 2), "task.md", env=_bytes_tokenizer(tmp_path))
    assert r.code == 5 and r.summary["budget"]["name"] == "max_tokens", r.summary
    assert r.summary["budget"]["next_request_estimate"] > request["prompt_bytes"] // 2


def test_a_server_that_counts_nothing_is_counted_in_the_tokenizers_tokens(fake, workspace, agent_run, tmp_path):
    fake.add(reply(calls=[("list", {})], usage=NO_USAGE), reply("done", usage=NO_USAGE))
    r = agent_run("task.md", env=_bytes_tokenizer(tmp_path))
    assert r.code == 0 and r.summary["usage"]["estimated"] is True, r.summary
    counted = [e["usage"]["prompt_tokens"] for e in r.of_type("model_response")]
    assert counted == [e["estimated_tokens"] for e in r.of_type("model_request")]  # what the budgets add up


def test_the_estimate_is_calibrated_from_the_first_reported_prompt_tokens(fake, workspace, agent_run):
    fake.add(reply("done"))
    first = agent_run("task.md").of_type("model_request")[0]["estimated_tokens"]
    counted = int(1.9 * first)  # the server counts 1.9 tokens where chars/4 says one
    usage = {"prompt_tokens": counted, "completion_tokens": 10, "total_tokens": counted + 10}
    fake.add(reply(THINK, calls=[("bash", {"command": "echo 0"})], usage=usage), *_bash(10)[1:], reply("done"))
    r = agent_run("--context-window", "60000", "--approve", "bash:shell:*", "task.md")
    assert r.code == 0, r.summary
    [event, *_] = r.of_type("compaction")
    requests = r.of_type("model_request")
    before = next(e["prompt_bytes"] / 4 for e in requests if e["turn"] == event["turn"] - 1)
    assert event["before_tokens"] > 1.7 * before  # the turn before, in chars/4: the context counts 1.9 a token
    # and so does every request after the first: the event, the budgets and the window check take that count
    assert all(e["estimated_tokens"] > 1.7 * e["prompt_bytes"] / 4 for e in requests[1:]), requests
