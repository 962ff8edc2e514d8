"""Compaction that makes progress: large protected calls carried by reference, a summary that
falls short is not retried every turn, history snapshots stored once, token estimates that do
not re-serialise the conversation."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from runner.context.manager import ContextConfig, ContextManager, load_snapshot
from runner.context.prune import SUMMARY_MARKER, carried_line, elide_arguments, recent_start, summarized
from runner.core.jsonutil import canonical, estimate_tokens
from tests.context.test_prune import KINDS, convo, ph, thinking


def writes(turns: int, size: int) -> list[dict]:
    msgs = [{"role": "system", "content": "sys"}, {"role": "user", "content": "task"}]
    for t in range(turns):
        args = json.dumps({"path": f"src/f{t}.txt", "content": f"{t % 10}" * size})
        msgs.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{t}", "type": "function", "function": {"name": "write", "arguments": args}}]})
        msgs.append({"role": "tool", "tool_call_id": f"c{t}", "content": f"created src/f{t}.txt ({size} bytes)"})
    return msgs


def test_large_protected_calls_are_carried_by_reference(tmp_path):
    msgs = writes(10, 5000)
    spilled = []

    def spill(text: str) -> str:
        path = tmp_path / f"tool_{len(spilled)}"
        path.write_text(text)
        spilled.append(text)
        return str(path)

    m = ContextManager(ContextConfig(window=40_000, kinds=KINDS), lambda e: None, None, lambda _: "sum", spill=spill)
    out = summarized(msgs, "sum", recent_start(msgs, 3), KINDS, carry=m._carry)
    text = out[2]["content"]
    assert text.startswith(SUMMARY_MARKER) and len(text) < 3000  # 7 calls of 5 KB each: not by value
    assert '"path": "src/f0.txt", "content": "<5000 chars>"' in text and "created src/f0.txt" in text
    ref = text.split("full call: ")[1].split("]")[0]
    path, digest = ref.split(" sha256:")
    assert hashlib.sha256(Path(path).read_bytes()).hexdigest().startswith(digest)
    assert "0" * 5000 in spilled[0]  # the whole call is kept
    # Small calls stay verbatim, and without a spill the line says where to look.
    assert carried_line("todo", '{"a": 1}', "ok", None) == '- todo {"a": 1}: ok'
    assert "use memory_search" in carried_line("write", json.dumps({"content": "x" * 2000}), "ok", None)
    assert elide_arguments("not json " + "y" * 200).endswith("…")


def test_a_summary_that_falls_short_is_not_retried_every_turn():
    calls = []
    m = ContextManager(ContextConfig(window=20_000, kinds=KINDS), lambda e: None, None,
                       lambda msgs: calls.append(1) or "s")
    # Recent turns alone are most of the context: a summary could not free a tenth of it, so none is asked.
    m.prepare(convo(6, size=16_000), [], 1, ph)
    assert calls == []
    # Old long text (summarizable) and recent turns over the target: it falls short of the target.
    msgs = thinking(6, 6_000, size=8_000)
    out = m.prepare(msgs, [], 1, ph)
    assert len(calls) == 1 and out[2]["content"].startswith(SUMMARY_MARKER)
    grown = [*out, *convo(1, size=100)[2:]]
    grown[-2] = {**grown[-2], "tool_calls": [{**grown[-2]["tool_calls"][0], "id": "n1"}]}
    grown[-1] = {**grown[-1], "tool_call_id": "n1"}
    m.prepare(grown, [], 2, ph)
    assert len(calls) == 1  # backed off: the context has not grown enough since


def test_a_failed_summary_backs_off_too():
    calls = []

    def broken(_):
        calls.append(1)
        raise RuntimeError("down")

    m = ContextManager(ContextConfig(window=20_000, kinds=KINDS), lambda e: None, None, broken)
    msgs = thinking(8, 6_000, size=3_000)
    out = m.prepare(msgs, [], 1, ph)
    m.prepare([*out, *convo(1, size=10)[2:]], [], 2, ph)
    assert len(calls) == 1


def test_snapshots_store_each_message_once_and_skip_repeats(tmp_path):
    m = ContextManager(ContextConfig(window=20_000, kinds=KINDS), lambda e: None, tmp_path / "history", lambda _: "s")
    msgs = convo(8, size=30_000)
    first = m._snapshot(msgs)
    assert m._snapshot(msgs) == first  # nothing changed: no new snapshot
    second = m._snapshot([*msgs, {"role": "user", "content": "more"}])
    assert first != second and load_snapshot(Path(second))[-1]["content"] == "more"
    assert load_snapshot(Path(first)) == msgs
    blobs = list((tmp_path / "history" / "messages").iterdir())
    assert len(blobs) == len(msgs) + 1  # shared messages stored once
    assert all(oct(p.stat().st_mode & 0o777) == "0o444" for p in [*blobs, Path(first), Path(second)])


def test_token_estimate_matches_the_canonical_prompt():
    m = ContextManager(ContextConfig(window=20_000, kinds=KINDS), lambda e: None)
    tools = [{"type": "function", "function": {"name": "x", "parameters": {"é": 1}}}]
    for msgs in ([], convo(1), convo(5, size=777)):
        for t in (tools, []):
            assert m.tokens(msgs, t) == estimate_tokens(len(canonical({"tools": t, "messages": msgs})))
    msgs = convo(3)
    m.tokens(msgs, tools)
    changed = [*msgs[:-1], {**msgs[-1], "content": "y" * 5000}]  # a new dict, as pruning makes
    assert m.tokens(changed, tools) == estimate_tokens(len(canonical({"tools": tools, "messages": changed})))


def test_a_call_referenced_by_a_batch_that_was_not_kept_is_still_carried_by_reference(tmp_path):
    """prepare computes a stage-2 batch (which keeps written arguments by reference) and may summarize instead: the
    summary then covers the conversation with its arguments whole, and must not carry them by value."""
    def spill(text: str) -> str:
        path = tmp_path / f"call_{len(list(tmp_path.iterdir()))}"
        path.write_text(text)
        return str(path)

    msgs = writes(10, 5000)
    m = ContextManager(ContextConfig(window=40_000, kinds=KINDS), lambda e: None, None, lambda _: "sum", spill=spill)
    m._clear(msgs, [], ph)  # the batch, not kept
    text = summarized(msgs, "sum", recent_start(msgs, 3), KINDS, carry=m._carry)[2]["content"]
    assert len(text) < 3000 and "0" * 200 not in text and text.count("full call: ") == 7
