"""Skills that stay followed (issue 46 item 5), through the real CLI with the scripted model: a loaded skill's key
rules are recited once more when a call it governs comes 20 turns after it was loaded (or last recited), and its
whole text is offered again after two errors of one type in calls it governs."""

from __future__ import annotations

import json
from pathlib import Path

from tests.fakes.openai_server import reply

SKILL = """---
name: careful
description: Edit files carefully.
reminder: Always read a file before you edit it; never touch generated/.
---
# Careful editing

Read first. Keep diffs small.

## Details

FULL-TEXT-MARKER: run the formatter after each edit.
"""


def _result(fake, i: int) -> str:
    return fake.requests[i]["messages"][-1]["content"]


def test_a_skill_is_recited_after_20_turns_and_offered_whole_after_two_errors(fake, workspace: Path, agent_run):
    d = workspace / ".agents" / "skills" / "careful"
    d.mkdir(parents=True)
    (d / "SKILL.md").write_text(SKILL, encoding="utf-8")
    (workspace / "a.txt").write_text("".join(f"line {i}\n" for i in range(40)), encoding="utf-8")
    steps = [reply(calls=[("skill", {"name": "careful"})]),  # turn 1
             reply(calls=[("read", {"path": "missing1.txt"})]),  # turn 2: one error
             reply(calls=[("read", {"path": "missing2.txt"})])]  # turn 3: the same type again
    steps += [reply(calls=[("read", {"path": "a.txt", "offset": i + 1, "limit": 1})]) for i in range(21)]
    fake.add(*steps, reply("done"))
    r = agent_run("--max-turns", "40", "task.md")
    assert r.code == 0, r.stderr
    assert "FULL-TEXT-MARKER" not in _result(fake, 2)  # one error: nothing yet
    whole = _result(fake, 3)  # the second error of that type: the skill's whole text again
    assert "FULL-TEXT-MARKER" in whole and "careful" in whole
    recited = [i for i in range(4, len(fake.requests)) if "never touch generated/" in _result(fake, i)]
    # Turn 3 offered it whole; the first governed call 20 turns on (turn 23) recites the reminder, once.
    assert recited == [23]
    assert "FULL-TEXT-MARKER" not in _result(fake, 23)


def test_a_childs_plan_items_have_ids_and_a_failed_state_mirrored_in_plan_json(fake, workspace: Path, agent_run):
    from tests.cli.test_subagents import ALLOW_TASK, CHILD, _policy, _task

    first = [{"content": "port a.py", "status": "in_progress"}, {"content": "port b.py", "status": "pending"}]
    then = [{"content": "port a.py", "status": "completed"}, {"content": "port b.py", "status": "failed"},
            {"content": "report", "status": "pending"}]
    fake.add(reply(calls=[_task({})]), reply("parent done"))
    fake.route(CHILD, reply(calls=[("todo", {"todos": first})]), reply(calls=[("todo", {"todos": then})]),
               reply("b.py failed"))
    r = agent_run("--policy", _policy(workspace, ALLOW_TASK), "task.md")
    assert r.code == 0, r.stderr
    mirrored = json.loads((r.run_dir / "plan.json").read_text(encoding="utf-8"))
    assert mirrored == {"a1": [{"id": "1", "content": "port a.py", "status": "completed"},
                               {"id": "2", "content": "port b.py", "status": "failed"},
                               {"id": "3", "content": "report", "status": "pending"}]}
    child = next(a for a in r.summary["agents"] if a["id"] == "a1")
    assert child["todos"] == mirrored["a1"]
    todo = [e for e in r.of_type("tool_result") if e["tool"] == "todo"]
    assert [e["ok"] for e in todo] == [True, True] and "[!] port b.py" in todo[1]["content"]
