"""Pruning stages as pure functions, and the manager's thresholds."""

from __future__ import annotations

from runner.context.manager import ContextConfig, ContextManager
from runner.context.prune import (
    CLEARED_MARKER,
    SUMMARY_MARKER,
    ToolKinds,
    hard_clear,
    recent_start,
    soft_trim,
    summarized,
)
from runner.subagents.builtin import BUILTIN

KINDS = ToolKinds.of(BUILTIN)  # the built-in tools' context classes


def convo(turns: int, size: int = 100, tool: str = "bash") -> list[dict]:
    msgs = [{"role": "system", "content": "sys"}, {"role": "user", "content": "task"}]
    for t in range(turns):
        cid = f"c{t}"
        msgs.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": cid, "type": "function", "function": {"name": tool, "arguments": f'{{"n": {t}}}'}}]})
        msgs.append({"role": "tool", "tool_call_id": cid, "content": f"out{t} " + "x" * size})
    return msgs


def thinking(turns: int, think: int, size: int = 100) -> list[dict]:
    """A conversation whose assistant turns carry `think` characters of text: stage 2 cannot clear it."""
    msgs = convo(turns, size)
    for m in msgs:
        if m["role"] == "assistant":
            m["content"] = "I think " * (think // 8)
    return msgs


def ph(cid, tool, args, content=""):
    return f"{CLEARED_MARKER}: {tool} {args} ({cid})]"


def test_soft_trim_keeps_head_and_tail_lines_and_says_where():
    text = "".join(f"line {i}\n" for i in range(2000))
    out = soft_trim(text, 1000, "/r/outputs/tool_1")
    assert out.startswith("line 0\n") and out.endswith("line 1999\n")
    assert "bytes trimmed as the context grew; full output: /r/outputs/tool_1" in out
    assert len(out.encode()) < 1200
    assert soft_trim("short", 1000, None) == "short"


def test_recent_start_protects_the_last_turns():
    msgs = convo(6)
    start = recent_start(msgs, 3)
    assert msgs[start]["role"] == "assistant" and sum(m["role"] == "assistant" for m in msgs[start:]) == 3
    assert recent_start(convo(2), 3) == 2


def test_hard_clear_replaces_old_results_once_and_spares_protected_tools():
    msgs = convo(6)
    msgs[3]["content"] = "edited a.txt"  # make one of them an edit result
    msgs[2]["tool_calls"][0]["function"]["name"] = "edit"
    before = recent_start(msgs, 3)
    cleared, counts = hard_clear(msgs, before, ph, KINDS)
    assert counts == {"bash": 2}
    assert cleared[3]["content"] == "edited a.txt"  # protected tool kept
    assert cleared[5]["content"].startswith(CLEARED_MARKER)
    assert cleared[before:] == msgs[before:]  # the recent turns untouched
    again, counts2 = hard_clear(cleared, before, ph, KINDS)
    assert counts2 == {} and again == cleared  # a placeholder is never changed again


def test_summarized_keeps_system_task_and_recent():
    msgs = convo(6)
    keep = recent_start(msgs, 3)
    out = summarized(msgs, "the summary", keep, KINDS)
    assert out[:2] == msgs[:2] and out[2] == {"role": "user", "content": f"{SUMMARY_MARKER}\nthe summary"}
    assert out[3:] == msgs[keep:]


def test_summary_carries_protected_outputs_verbatim():
    msgs = convo(6)
    msgs[2]["tool_calls"][0]["function"]["name"] = "write"
    msgs[3]["content"] = "created notes.md (12 bytes)"
    out = summarized(msgs, "s", recent_start(msgs, 3), KINDS)
    assert 'write {"n": 0}: created notes.md (12 bytes)' in out[2]["content"]
    assert "out1" not in out[2]["content"]  # unprotected outputs are summarized away


def test_placeholder_names_the_spill_file():
    from runner.engine.loop import placeholder

    cut = "...\nFull output: /r/outputs/tool_20261122T0_ab12 — use grep"
    text = placeholder("c1", "bash", '{"command": "make"}', cut)
    assert "the full output is in /r/outputs/tool_20261122T0_ab12" in text and "(call c1)" in text
    assert "memory_search" in placeholder("c2", "grep", "{}", "short")


def test_a_second_summary_keeps_the_first():
    msgs = convo(6)
    first = summarized(msgs, "one", recent_start(msgs, 3), KINDS)
    grown = first + convo(9)[2 + 6:]  # three more turns
    second = summarized(grown, "two", recent_start(grown, 3), KINDS)
    assert second[:3] == first[:3]  # the earlier summary is never changed again
    assert second[3]["content"] == f"{SUMMARY_MARKER}\ntwo"


def test_manager_stages_by_share_of_the_usable_window():
    events = []
    config = ContextConfig(window=20_000, soft_keep_bytes=300, kinds=KINDS)
    assert config.usable == 16_000
    calls = []

    def summarize(messages):
        calls.append(messages)
        return "summary"

    m = ContextManager(config, events.append, None, summarize)
    small = convo(2, size=50)
    assert m.prepare(small, [], 1, ph) == small and m.counts == {"soft_trim": 0, "hard_clear": 0, "summarize": 0}
    # ~56% of 16,000 tokens: stage 2 clears the old results in one batch.
    mid = convo(12, size=3000)
    out = m.prepare(mid, [], 2, ph)
    assert m.counts["hard_clear"] == 1 and m.counts["summarize"] == 0
    assert sum(str(x.get("content", "")).startswith(CLEARED_MARKER) for x in out) == 9
    assert [e.stage for e in events] == ["hard_clear"] and events[0].after_tokens < events[0].before_tokens
    # Past 70% with what stage 2 cannot clear (long assistant text): stage 3 summarizes.
    big = thinking(12, 6_000)
    out = m.prepare(big, [], 3, ph)
    assert m.counts["summarize"] == 1 and out[2]["content"].startswith(SUMMARY_MARKER)
    assert calls[0][-1]["role"] == "user" and "summary" in calls[0][-1]["content"].lower()


def test_a_failing_summary_degrades_to_pruning():
    events = []

    def broken(_):
        raise RuntimeError("model down")

    m = ContextManager(ContextConfig(window=20_000, kinds=KINDS), events.append, None, broken)
    msgs = thinking(8, 6_000, size=3_000)
    out = m.prepare(msgs, [], 1, ph)
    stages = [e.stage for e in events]
    assert "summarize_failed" in stages and "model down" in events[stages.index("summarize_failed")].summary
    assert "hard_clear" in stages  # the run goes on with what pruning can do
    assert sum(str(x.get("content", "")).startswith(CLEARED_MARKER) for x in out) > 0


def test_history_snapshot_is_written_before_a_summary_and_read_only(tmp_path):
    m = ContextManager(ContextConfig(window=20_000, kinds=KINDS), lambda e: None, tmp_path / "history", lambda _: "s")
    m.prepare(thinking(8, 6_000, size=3_000), [], 1, ph)
    snap = tmp_path / "history" / "1.json"
    assert snap.exists() and oct(snap.stat().st_mode & 0o777) == "0o444"


def test_stage_1_starts_at_30_percent():
    m = ContextManager(ContextConfig(window=20_000, soft_keep_bytes=500, kinds=KINDS), lambda e: None, None, None)
    big = "line\n" * 1000
    below = convo(2, size=100)  # far under 30% of 16,000 tokens
    m.bind(below, [])
    assert m.admit_bound(big) == big
    above = convo(8, size=2600)  # ~5,500 tokens: over 30%, under 50%
    assert 0.3 <= m.share(above, []) < 0.5
    m.bind(above, [])
    trimmed = m.admit_bound(big)
    assert trimmed != big and "trimmed as the context grew" in trimmed and m.counts["soft_trim"] == 1
    assert m.admit_bound("short\n") == "short\n"  # small results are never trimmed
