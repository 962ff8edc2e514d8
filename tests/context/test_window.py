"""The window as a hard limit (runner/context/window.py) and what stays whole: skills and subagent answers
kept through summaries, written arguments kept by reference, a whole result that cannot fit refused, a
context that cannot be kept ending the run."""

from __future__ import annotations

import hashlib
import json

import pytest

from runner.context.manager import ContextConfig, ContextManager
from runner.context.prune import SUMMARY_MARKER, by_reference, frozen_end, hard_clear, recent_start, summarized
from runner.core.outcome import BudgetExhausted
from runner.tools.base import ToolError
from tests.context.test_prune import KINDS, convo, ph


def _call(messages: list[dict], index: int, tool: str, args: dict) -> None:
    """Make turn `index` (0-based) of a `convo` a call of `tool` with `args`."""
    call = messages[2 + 2 * index]["tool_calls"][0]
    call["function"] = {"name": tool, "arguments": json.dumps(args)}


def test_a_summary_keeps_skills_and_answers_whole_after_it():
    msgs = convo(8)
    _call(msgs, 1, "skill", {"name": "style"})
    msgs[5]["content"] = "# Skill: style\n" + "rule\n" * 400
    _call(msgs, 3, "task", {"description": "d", "prompt": "p"})
    msgs[9]["content"] = "the child's answer " * 300
    out = summarized(msgs, "sum", recent_start(msgs, 3), KINDS)
    assert out[2]["content"].startswith(SUMMARY_MARKER) and "rule\n" * 400 not in out[2]["content"]
    assert out[3:7] == [msgs[4], msgs[5], msgs[8], msgs[9]]  # the calls and their results, whole, in order
    assert out[7:] == msgs[recent_start(msgs, 3):]
    # A later summary leaves them where they are: they are part of the prefix no summary changes again.
    grown = out + convo(12)[2 + 16:]
    assert frozen_end(grown, recent_start(grown, 3), KINDS) == 7
    again = summarized(grown, "two", recent_start(grown, 3), KINDS)
    assert again[:7] == out[:7] and again[7]["content"] == f"{SUMMARY_MARKER}\ntwo"


def test_a_whole_call_beside_others_keeps_only_itself():
    msgs = convo(6)
    msgs[2]["tool_calls"].append({"id": "s1", "type": "function",
                                  "function": {"name": "skill", "arguments": '{"name": "x"}'}})
    msgs.insert(4, {"role": "tool", "tool_call_id": "s1", "content": "# Skill: x\nbody"})
    out = summarized(msgs, "sum", recent_start(msgs, 3), KINDS)
    assert out[3]["tool_calls"] == [msgs[2]["tool_calls"][1]] and out[4]["content"] == "# Skill: x\nbody"


def test_stage_2_never_clears_a_skill_and_keeps_written_arguments_by_reference(tmp_path):
    msgs = convo(6, size=3000)
    _call(msgs, 0, "skill", {"name": "x"})
    _call(msgs, 1, "write", {"path": "src/a.py", "content": "print(1)\n" * 400})
    cleared, counts = hard_clear(msgs, recent_start(msgs, 3), ph, KINDS)
    assert cleared[3] == msgs[3] and counts == {"bash": 1}
    spilled = tmp_path / "tool_1"
    spilled.write_text("the call")
    ref = f"full call: {spilled} sha256:{hashlib.sha256(b'the call').hexdigest()[:16]}"
    kept, refs = by_reference(cleared, recent_start(msgs, 3), lambda *_: ref, KINDS)
    args = json.loads(kept[4]["tool_calls"][0]["function"]["arguments"])
    assert refs == {"write": 1} and args["path"] == "src/a.py" and args["content"] == f"<3600 chars; {ref}>"
    assert by_reference(kept, len(kept), lambda *_: "other", KINDS)[0][4] == kept[4]  # never changed again


def test_a_whole_result_that_cannot_fit_is_refused_with_where_it_is(tmp_path):
    spill = tmp_path / "tool_1"
    m = ContextManager(ContextConfig(window=16_384, kinds=KINDS), lambda e: None,
                       spill=lambda text: (spill.write_text(text), str(spill))[1])
    m.bind(convo(2), [])
    assert m.admit_bound("x" * 20_000, "skill") == "x" * 20_000  # ~5K tokens: fits whole, never trimmed
    with pytest.raises(ToolError) as refused:
        m.admit_bound("y" * 60_000, "task")
    assert refused.value.type == "ContextFull" and "the subagent's answer is ~15,0" in refused.value.message
    assert spill.read_text() == "y" * 60_000 and refused.value.extra["path"] == str(spill)


def test_a_context_that_cannot_be_kept_ends_the_run():
    m = ContextManager(ContextConfig(window=16_384, kinds=KINDS), lambda e: None, None, lambda _: "s")
    msgs = convo(3)
    for x in msgs[2:]:
        if x["role"] == "assistant":
            x["content"] = "reasoning " * 2000  # the recent turns' own text: nothing can free it
    with pytest.raises(BudgetExhausted) as ended:
        m.prepare(msgs, [], 4, ph)
    budget = ended.value.details["budget"]
    assert budget["name"] == "context_window" and budget["limit"] == 13_108 and budget["used"] > 13_108
    assert "16,384-token context window" in ended.value.reason
    with pytest.raises(BudgetExhausted):
        m.fits(13_109)
    m.fits(13_108)


def test_the_compaction_call_itself_fits_the_window():
    asked = []
    m = ContextManager(ContextConfig(window=16_384, kinds=KINDS), lambda e: None, None,
                       lambda msgs: asked.append(msgs) or "s")
    msgs = convo(10, size=6000)  # ~15K tokens: over the usable window before any stage
    out = m.prepare(msgs, [], 1, ph)
    assert m.tokens(out, []) <= 13_108
    assert all(m.tokens(a, []) <= 13_108 for a in asked)


def test_with_no_window_known_nothing_is_refused_or_ended():
    m = ContextManager(ContextConfig(window=None, max_chars=40_000, kinds=KINDS), lambda e: None, None, None)
    msgs = convo(3)
    for x in msgs[2:]:
        if x["role"] == "assistant":
            x["content"] = "reasoning " * 2000  # over maxChars / 4, which is only a guess
    assert m.prepare(msgs, [], 4, ph) is not None
    m.fits(10**6)
    m.bind(msgs, [])
    assert m.admit_bound("z" * 60_000, "skill") == "z" * 60_000
