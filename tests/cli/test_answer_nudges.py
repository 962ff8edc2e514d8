"""A non-answer is not an answer (issue 44 item 2), through the CLI: a reply without a tool call that claims a change
no file shows, hands the user the work, or announces what it will do is refused once per kind (--answer-nudges,
default 2), the model told what was seen, and the next request asks for an action: tool_choice "required", or the
instruction alone where the server refuses it."""

from __future__ import annotations

import json

from tests.fakes.dialects import use
from tests.fakes.openai_server import reply


def test_a_claimed_fix_without_a_change_is_nudged_once_then_made(fake, workspace, agent_run):
    use(fake, "openai")
    (workspace / "app.py").write_text("x = 1\n")
    fake.add(reply("I fixed the bug in app.py."),
             reply(calls=[("edit", {"path": "app.py", "old_string": "x = 1", "new_string": "x = 2"})]),
             reply("Fixed: x is 2 now."))
    r = agent_run("task.md")
    assert r.code == 0, r.stderr
    refused, = r.of_type("answer_refused")
    assert (refused["reason"], refused["turn"]) == ("claimed_change", 1)
    assert [q.get("tool_choice") for q in fake.requests] == ["auto", "required", "auto"]
    told = fake.requests[1]["messages"][-1]
    assert told["role"] == "user" and "No file changed in this run" in told["content"]
    assert (workspace / "app.py").read_text() == "x = 2\n"
    assert r.summary["answer"] == "Fixed: x is 2 now."


def test_where_the_server_refuses_required_the_instruction_goes_alone(fake, workspace, agent_run):
    dialect = use(fake, "llama-cpp-python")  # chatml-function-calling asserts tool_choice "auto": HTTP 500
    fake.add(reply("Let me list the files."), reply(calls=[("list", {"path": "."})]), reply("There is task.md."))
    r = agent_run("task.md")
    assert r.code == 0, r.stderr
    assert [e["reason"] for e in r.of_type("answer_refused")] == ["announced"]
    assert [q.get("tool_choice") for q in fake.requests] == ["auto", "required", "auto", "auto"]
    assert "Let me" in fake.requests[2]["messages"][-1]["content"]
    assert dialect.log == [""]  # its assert, as the real server logs it
    warning, = [e for e in r.of_type("warning") if e["code"] == "model_param_dropped"]
    assert 'tool_choice "required"' in warning["message"]


def test_a_call_amid_prose_is_shown_back_alone_then_runs(fake, workspace, agent_run):
    # Qwen2.5-Coder-1.5B's reply, verbatim in shape (bench/bench_solve.py): a sentence, a fenced call, a sentence.
    # `auto` never runs it (text around it); the model is shown its call as it would run, and sends it alone.
    (workspace / "app.py").write_text("x = 1\n")
    call = {"name": "edit", "arguments": {"path": "app.py", "old_string": "x = 1", "new_string": "x = 2"}}
    fake.add(reply(f"I will fix app.py.\n\n```json\n{json.dumps(call, indent=2)}\n```\n\nAfter that the check passes."),
             reply(json.dumps(call)), reply("x is 2 in app.py."))
    r = agent_run("task.md")
    assert r.code == 0, r.stderr
    assert [(e["reason"], e["turn"]) for e in r.of_type("answer_refused")] == [("quoted_call", 1)]
    told = fake.requests[1]["messages"][-1]["content"]
    assert "reply with the call alone, nothing before or after it" in told
    assert told.endswith(json.dumps(call) + "]")  # the call as the model's text would run: alone
    assert [q.get("tool_choice") for q in fake.requests] == ["auto", "required", "auto"]
    assert [(c["tool"], c["source"]) for c in r.of_type("tool_call")] == [("edit", "text")]
    assert (workspace / "app.py").read_text() == "x = 2\n"


STATS = ("def total(numbers):\n    result = 0\n    for i in range(1, len(numbers)):\n        result += numbers[i]\n"
         "    return result\n\n\ndef mean(numbers):\n    return total(numbers) / len(numbers)\n")
FIXED = STATS.replace("range(1, len(numbers))", "range(len(numbers))")
# The 1.5B model's reply once it had read stats.py (bench/bench_solve.py), in shape: the fixed function, handed over.
HANDED = ("The bug in `stats.py` is that the loop starts at 1. Here's the corrected code:\n\n```python\n"
          + FIXED.split("\n\n\n")[0] + "\n```\n\nNow `python3 test_stats.py` passes.")


def test_a_code_block_handed_over_is_shown_back_as_the_edit_that_makes_it(fake, workspace, agent_run):
    (workspace / "stats.py").write_text(STATS)
    edit = {"path": "stats.py", "old_string": "    for i in range(1, len(numbers)):\n",
            "new_string": "    for i in range(len(numbers)):\n"}
    fake.add(reply(calls=[("read", {"path": "stats.py"})]), reply(HANDED), reply(calls=[("edit", edit)]),
             reply("total starts at 0 now."))
    r = agent_run("task.md")
    assert r.code == 0, r.stderr
    assert [e["reason"] for e in r.of_type("answer_refused")] == ["handed_over"]
    told = fake.requests[2]["messages"][-1]["content"]
    assert told.endswith("reply with this tool call (the tool_calls field) and nothing else:\n"
                         + json.dumps({"name": "edit", "arguments": edit}) + "]")
    assert (workspace / "stats.py").read_text() == FIXED  # the other function kept: a snippet replaces its lines


def test_a_code_block_for_a_file_not_read_in_the_run_shows_none_of_it(fake, workspace, agent_run):
    # The edit would quote the file's lines: only for a file the agent has read (the policy let it see them).
    (workspace / "stats.py").write_text(STATS)
    fake.add(reply(HANDED), reply(HANDED))
    r = agent_run("task.md")
    assert r.code == 0, r.stderr
    told = fake.requests[1]["messages"][-1]["content"]
    assert "Do it yourself with the tools" in told and "range(1, len(numbers))" not in told


def test_each_files_block_is_shown_back_as_its_edit_the_file_named_anywhere_in_the_reply(fake, workspace, agent_run):
    # The 1.5B model's version bump (bench/bench_solve.py): the file named a paragraph before its block, then a second
    # file's block after the first edit. Each block is matched to a file by its lines; a new edit is a new nudge.
    (workspace / "a.toml").write_text('name = "x"\nversion = "1"\n')
    (workspace / "b.py").write_text('V = "1"\n\n\ndef f():\n    return 1\n')
    first = {"path": "a.toml", "old_string": 'version = "1"\n', "new_string": 'version = "2"\n'}
    second = {"path": "b.py", "old_string": 'V = "1"\n', "new_string": 'V = "2"\n'}
    fake.add(reply(calls=[("read", {"path": "a.toml"}), ("read", {"path": "b.py"})]),
             reply('Bump `a.toml` and `b.py` to 2.\n\nHere it is:\n\n```toml\nname = "x"\nversion = "2"\n```'),
             reply(calls=[("edit", first)]),
             reply('Then the module.\n\nThe updated file for `b.py`:\n\n```python\nV = "2"\n\ndef f():\n'
                   '    return 1\n```'),
             reply(calls=[("edit", second)]), reply("Both are 2 now."))
    r = agent_run("task.md")
    assert r.code == 0, r.stderr
    assert [e["reason"] for e in r.of_type("answer_refused")] == ["handed_over", "handed_over"]
    assert fake.requests[2]["messages"][-1]["content"].endswith(json.dumps({"name": "edit", "arguments": first}) + "]")
    assert fake.requests[4]["messages"][-1]["content"].endswith(json.dumps({"name": "edit", "arguments": second}) + "]")
    assert (workspace / "a.toml").read_text() == 'name = "x"\nversion = "2"\n'
    assert (workspace / "b.py").read_text() == 'V = "2"\n\n\ndef f():\n    return 1\n'
