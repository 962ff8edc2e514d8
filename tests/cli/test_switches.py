"""The small switches the design names (issue 46 item 6), each through the real CLI: the AGENTS.md chain left out, a
call's own byte limit, truncation presets, the doom-loop guard on big arguments, read-only tools' own time limits."""

from __future__ import annotations

import json

from tests.fakes.openai_server import reply


def _policy(workspace, **sections) -> str:
    (workspace / "p.json").write_text(json.dumps({"extends": "default", **sections}))
    return "p.json"


def test_no_project_instructions_leaves_the_agents_md_chain_out(fake, workspace, agent_run):
    (workspace / "AGENTS.md").write_text("Run `make test` before you finish.\n")
    fake.add(reply("ok"))
    r = agent_run("--no-project-instructions", "task.md")
    assert r.code == 0, r.stderr
    system = fake.requests[0]["messages"][0]["content"]
    assert "make test" not in system and "Project instructions" not in system
    assert r.of_type("run_started")[0]["instructions"] is None


def test_a_calls_max_bytes_cuts_its_output_below_the_policys_limit(fake, workspace, agent_run):
    (workspace / "big.txt").write_text("".join(f"line {i:04d} {'x' * 80}\n" for i in range(300)))
    fake.add(reply(calls=[("read", {"path": "big.txt", "max_bytes": 2000})]), reply("ok"))
    r = agent_run("task.md")
    assert r.code == 0, r.stderr
    result = r.of_type("tool_result")[0]
    assert result["ok"] and result["details"]["truncated"] is True
    shown = fake.requests[1]["messages"][-1]["content"]
    assert "line 0000" in shown and "line 0100" not in shown


def test_truncation_preset_compact_cuts_sooner_than_the_default(fake, workspace, agent_run):
    (workspace / "mid.txt").write_text("".join(f"line {i:04d} {'y' * 80}\n" for i in range(300)))  # ~27 KB
    fake.add(reply(calls=[("read", {"path": "mid.txt"})]), reply("ok"))
    r = agent_run("--policy", _policy(workspace, truncation={"preset": "compact"}), "task.md")
    assert r.code == 0, r.stderr
    assert r.of_type("tool_result")[0]["details"]["truncated"] is True  # under default's 50 KiB it was whole


def test_calls_with_big_arguments_count_by_tool_name_in_the_loop_guard(fake, workspace, agent_run):
    # Each command differs (a model rewriting a huge argument a little each time): over 4 KiB, the tool's name is
    # what repeats, with the same result.
    fake.add(*[reply(calls=[("bash", {"command": f"true # {i} " + "z" * 5000})]) for i in range(8)], reply("end"))
    r = agent_run("--policy", "full-access", "task.md")
    assert r.code == 4, r.stderr
    assert r.summary["loop"]["detector"] == "same_call" and len(r.of_type("tool_call")) == 5


def test_a_read_only_tools_own_time_limit_ends_its_call_not_the_run(fake, workspace, agent_run):
    (workspace / "a.txt").write_text("needle\n")
    fake.add(reply(calls=[("grep", {"pattern": "needle"})]), reply("ok"))
    r = agent_run("--policy", _policy(workspace, tools={"grep": {"timeoutSeconds": 0.000001}}), "task.md")
    assert r.code == 0, r.stderr
    result = r.of_type("tool_result")[0]
    assert result["details"]["stopped"] == "the call's time limit (tools.grep.timeoutSeconds: 1e-06 s) is up"
