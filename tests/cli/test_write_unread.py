"""`write` never destroys a file the run has not read (issue 44, item 3): replacing an existing file the agent has not
`read` in this run is a `WouldOverwrite` tool error pointing to `read`/`edit` and the file is intact; `overwrite:
true` says it is meant; after a `read` (or a write or edit of the agent's own) it writes. `edit`'s "old_string not
found" shows the file's nearest lines, and an empty `grep` says what it searched."""

from __future__ import annotations

import json

from tests.fakes.openai_server import reply


def _error(result: dict) -> dict:
    return json.loads(result["content"])["error"]


def test_a_write_over_an_unread_file_is_refused_until_read_or_meant(fake, workspace, agent_run):
    (workspace / "lib.py").write_text("def f():\n    return 1\n", encoding="utf-8")
    (workspace / "conf.toml").write_text("version = '1'\n", encoding="utf-8")
    (workspace / "old.txt").write_text("old\n", encoding="utf-8")
    fake.add(reply(calls=[("write", {"path": "lib.py", "content": "f()\n"})]),
             reply(calls=[("read", {"path": "conf.toml"}),
                          ("write", {"path": "conf.toml", "content": "version = '2'\n"})]),
             reply(calls=[("write", {"path": "old.txt", "content": "new\n", "overwrite": True}),
                          ("write", {"path": "made.txt", "content": "1\n"}),
                          ("write", {"path": "made.txt", "content": "2\n"})]),
             reply("done"))
    r = agent_run("--policy", "ci", "task.md")
    assert r.code == 0, r.stderr
    refused, _, after_read, meant, created, again = r.of_type("tool_result")
    assert refused["error_type"] == "WouldOverwrite"
    error = _error(refused)
    assert "lib.py" in error["message"] and "read" in error["message"] and "edit" in error["message"]
    assert "overwrite" in error["message"]
    assert (workspace / "lib.py").read_text(encoding="utf-8") == "def f():\n    return 1\n"  # intact
    assert after_read["error_type"] is None and (workspace / "conf.toml").read_text() == "version = '2'\n"
    assert meant["error_type"] is None and (workspace / "old.txt").read_text() == "new\n"
    assert created["error_type"] is None and again["error_type"] is None  # its own file: the agent knows it
    assert (workspace / "made.txt").read_text() == "2\n"


def test_edit_not_found_shows_the_nearest_lines_and_an_empty_grep_says_what_it_searched(fake, workspace, agent_run):
    (workspace / "calc.py").write_text("import os\n\n\ndef add(a, b):\n    return a - b\n\n\nX = 1\n", encoding="utf-8")
    fake.add(reply(calls=[("edit", {"path": "calc.py", "old_string": "def add(a,b):\n    return a - b",
                                    "new_string": "def add(a, b):\n    return a + b"}),
                          ("grep", {"pattern": "subtract", "path": ".", "include": "*.py"})]),
             reply("done"))
    r = agent_run("--policy", "ci", "task.md")
    assert r.code == 0, r.stderr
    edit, grep = r.of_type("tool_result")
    message = _error(edit)["message"]
    assert "old_string not found in calc.py" in message
    assert "4\tdef add(a, b):" in message and "5\t    return a - b" in message  # numbered as `read` shows them
    assert "import os" not in message  # the nearest lines, not the file
    assert grep["content"] == "[no matches for `subtract` in 1 file under `.`, include `*.py`]"


def test_edit_not_found_with_nothing_alike_shows_a_small_file_whole(fake, workspace, agent_run):
    # The 1.5B model's call (bench/bench_solve.py missing_function): an old_string the file never held, no line like it.
    (workspace / "textutil.py").write_text("def shout(text):\n    return text.upper()\n\n\ndef words(text):\n"
                                           "    return text.split()\n", encoding="utf-8")
    fake.add(reply(calls=[("edit", {"path": "textutil.py", "old_string": "slugify", "new_string": "slugify"})]),
             reply("done"))
    r = agent_run("--policy", "ci", "task.md")
    assert r.code == 0, r.stderr
    message = _error(r.of_type("tool_result")[0])["message"]
    assert message.endswith("nothing in it is alike, and it holds (copy old_string from it exactly):\n"
                            "1\tdef shout(text):\n2\t    return text.upper()\n3\t\n4\t\n5\tdef words(text):\n"
                            "6\t    return text.split()")
