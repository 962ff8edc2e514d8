"""Arguments small models send that mean something plain (issue 27, item 6): `offset: 0` / `limit: 0` to `read`
("from the start", "as much as you give"), as `timeout_s: 0` to `bash` means the default. Qwen2.5-Coder 0.5B on
llama-cpp-python's own server sent `{"path": "calc.py", "offset": 0}` three times over: InvalidArguments each
time, and the run ended in a doom loop instead of reading the file."""

from __future__ import annotations

from tests.fakes.openai_server import reply


def test_read_takes_offset_and_limit_zero_as_the_start_and_the_default(fake, workspace, agent_run):
    (workspace / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    fake.add(reply(calls=[("read", {"path": "calc.py", "offset": 0, "limit": 0})]), reply("It subtracts."))
    r = agent_run("task.md")
    assert r.code == 0, r.stderr
    result = r.of_type("tool_result")[0]
    assert result["ok"] and result["content"] == "1\tdef add(a, b):\n2\t    return a - b", result
