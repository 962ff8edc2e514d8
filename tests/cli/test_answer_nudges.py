"""A non-answer is not an answer (issue 44 item 2), through the CLI: a reply without a tool call that claims a change
no file shows, hands the user the work, or announces what it will do is refused once per kind (--answer-nudges,
default 2), the model told what was seen, and the next request asks for an action: tool_choice "required", or the
instruction alone where the server refuses it."""

from __future__ import annotations

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
