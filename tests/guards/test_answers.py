"""The answer rules (runner/guards/answers.py, issue 44 item 2): deterministic text rules over a reply without tool
calls, the examples docs/guards.md lists; and the guard that applies them once per kind within --answer-nudges."""

from __future__ import annotations

import json

import pytest

from runner.core.outcome import Failed
from runner.guards.answers import AnswerGuard, Facts, seen_in, told

TOOLS = ("read", "edit", "write", "bash", "list")


def facts(changed: bool = False, can_change: bool = True, files: tuple[str, ...] = ("app.py",)) -> Facts:
    return Facts(changed=lambda: changed, can_change=can_change, exists=lambda p: p in files, tools=TOOLS)


def kinds(text: str, f: Facts | None = None) -> list[str]:
    return [s.kind for s in seen_in(text, f or facts())]


@pytest.mark.parametrize(("text", "expected"), [
    ("The version has been bumped in both files.", ["claimed_change"]),
    ("I fixed the off-by-one in app.py.", ["claimed_change"]),
    ("Renamed `total` to `sum_all` at every call site.", ["claimed_change"]),
    ("Nothing needed to be changed: the tests already pass.", []),
    ("I did not fix it: the test needs a network.", []),
    ("The answer is 42.", []),
    ("You need to add `import os` at the top.", ["handed_over"]),
    ("You can run `pytest -q` to see it pass.", ["handed_over"]),
    ("Replace the function in `app.py` with:\n\n```python\ndef f():\n    return 2\n```", ["handed_over"]),
    ("Here is an example:\n\n```python\ndef f():\n    return 2\n```", []),
    ("Put this in `new_module.py`:\n\n```python\nx = 1\n```", []),  # no such file: an answer may show code
    ("```python\n# app.py\nx = 2\n```", ["handed_over"]),
    ("It reads:\n```json\n{\"path\": \"app.py\"}\n```", []),  # code that mentions a file is not for it
    ("I read the file. I will now rename the function.", ["announced"]),
    ("Let me check the tests:", ["announced"]),
    ("Next, I update the call sites.", ["announced"]),
    ("I will rename it. The rename is in place now.", []),
    ("Done. Let me know if you need anything else.", []),
    ('{"error": {"type": "NotFound", "message": "no such file: a.py"}}', ["tool_error"]),
    ('<tool_call>\n{"name": "read", "arguments": {"path": "a"}}\n</tool_call>\n'
     '<tool_call>\n{"name": "read", "arguments": {"path": "b"}}\n</tool_call>', ["quoted_call", "text_calls"]),
])
def test_each_rule_sees_its_examples(text, expected):
    assert kinds(text) == expected


def test_a_call_amid_prose_is_shown_back_alone_as_json_never_one_a_tool_showed():
    # The 1.5B model's reply to the same chore, verbatim: Python's False in the call; shown back as JSON.
    text = ("To fix it, you can use the `edit` function:\n\n```python\n# Call the edit function\n"
            '{"name": "edit", "arguments": {"new_string": "5", "old_string": "3", "path": "config.json", '
            '"replace_all": False}}\n```\n\nAfter running this command, retries should be 5.')
    listening = Facts(changed=lambda: False, can_change=True, exists=lambda p: False, tools=TOOLS,
                      listening=lambda: True)
    quoted = seen_in(text, listening)[0]
    assert quoted.kind == "quoted_call" and json.loads(quoted.what) == {"name": "edit", "arguments": {
        "new_string": "5", "old_string": "3", "path": "config.json", "replace_all": False}}
    assert told(quoted, listening=True).endswith(f"or after it, one call per reply (or call it through the tool_calls "
                                                 f"field):\n{quoted.what}]")
    # A model that made a structured call: no call in its text is read, so the call is shown to make as one.
    assert told(seen_in(text, facts())[0]).endswith(f"as a tool call (the tool_calls field) and nothing else, one call "
                                                    f"per reply:\n{quoted.what}]")
    listening.heard.add(['Apply: {"name": "edit", "arguments": {"new_string": "5", "old_string": "3", '
                         '"path": "config.json", "replace_all": False}}'])
    assert "quoted_call" not in [s.kind for s in seen_in(text, listening)]  # a file's call is not offered back


def test_a_block_of_the_file_as_it_is_now_hands_nothing_over():
    # The 1.5B model showed the function it had just changed (bench/bench_solve.py): an answer, not work handed over.
    now = "def total(numbers):\n    result = 0\n    for n in numbers:\n        result += n\n    return result\n"
    shown = Facts(changed=lambda: True, can_change=True, exists=lambda p: p == "stats.py", tools=TOOLS,
                  read=lambda p: now if p == "stats.py" else None)
    assert kinds(f"I fixed `stats.py`:\n\n```python\n{now}```", shown) == []
    changed = now.replace("for n in numbers", "for n in numbers[1:]")
    assert kinds(f"I fixed `stats.py`:\n\n```python\n{changed}```", shown) == ["handed_over"]


def test_a_claim_with_a_change_and_work_handed_over_without_the_tools_are_answers():
    assert kinds("I fixed the off-by-one.", facts(changed=True)) == []
    assert kinds("You need to add `import os` at the top.", facts(can_change=False)) == []


def test_the_guard_refuses_once_per_kind_within_its_budget():
    guard = AnswerGuard(2, facts())
    first = guard("I fixed it.")
    assert first is not None and first.reason == "claimed_change" and "No file changed in this run" in first.message
    assert guard("I fixed it, really.") is None  # the same kind again: the answer stands
    assert guard("Let me look.").reason == "announced"  # type: ignore[union-attr]
    assert guard("You need to run it.") is None  # the budget is spent
    assert AnswerGuard(0, facts())("I fixed it.") is None


def test_a_non_answer_told_once_ends_the_run_the_second_time():
    guard = AnswerGuard(2, facts())
    assert guard('{"error": {"type": "NotFound", "message": "x"}}').reason == "tool_error"  # type: ignore[union-attr]
    with pytest.raises(Failed, match="a tool's error"):
        guard('{"error": {"type": "NotFound", "message": "x"}}')
