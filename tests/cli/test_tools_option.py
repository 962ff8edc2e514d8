"""`--tools LIST` through the CLI (runner/run/toolset.py): only the named tools are offered, in the registry's
order; the policy still decides each call; an unknown built-in is exit 2 before any run directory, an unknown
MCP tool exit 2 once the servers have started; resume and fork refuse it (the tool list is sealed); the rerun
command a denial prints carries it."""

from __future__ import annotations

import json

from tests.fakes.openai_server import reply


def _offered(request: dict) -> list[str]:
    return [t["function"]["name"] for t in request.get("tools") or []]


def test_only_the_named_tools_are_offered_and_the_rerun_carries_them(fake, workspace, agent_run):
    fake.add(reply(calls=[("write", {"path": "x.txt", "content": "x"})]),
             reply(calls=[("bash", {"command": "echo hi"})]),
             reply("done"))
    r = agent_run("--tools", "bash,read", "task.md")  # any order: the registry's is kept (prefix stability)
    assert r.code == 3, r.stderr  # the policy still decides: `default` asks for bash, so a denial
    assert all(_offered(req) == ["read", "bash"] for req in fake.requests)
    assert [t["function"]["name"] for t in json.loads((r.run_dir / "tools.json").read_text())] == ["read", "bash"]
    results = r.of_type("tool_result")
    assert results[0]["error_type"] == "UnknownTool"  # not offered: not served either
    assert not (workspace / "x.txt").exists()
    assert results[1]["error_type"] == "ApprovalRequired"
    assert "--tools bash,read" in results[1]["content"]  # the rerun repeats it
    s = r.summary
    assert s["status"] == "denied" and s["tool_calls"] == 2
    assert "agents" not in s or s["agents"] is None  # no `task` offered: no subagent machinery


def test_agent_run_tools_from_the_environment(fake, agent_run):
    fake.add(reply("done"))
    r = agent_run("task.md", env={"AGENT_RUN_TOOLS": "read"})
    assert r.code == 0, r.stderr
    assert _offered(fake.requests[0]) == ["read"]
    assert r.summary["status"] == "success" and [e["type"] for e in r.events][-1] == "run_finished"


def test_an_unknown_builtin_name_is_exit_2_before_any_run_directory(fake, agent_run):
    r = agent_run("--tools", "read,wirte", "--output-format", "json", "task.md")
    assert r.code == 2
    assert r.new_dirs == [] and not fake.requests
    assert "unknown tool 'wirte'" in r.stderr and "did you mean write" in r.stderr
    assert json.loads(r.stdout)["status"] == "usage_error"


def test_an_unknown_mcp_name_is_exit_2_once_the_servers_have_started(fake, agent_run):
    r = agent_run("--tools", "read,mcp__nope__x", "task.md")
    assert r.code == 2, r.stderr
    assert not fake.requests
    s = r.summary
    assert s["status"] == "usage_error" and "mcp__nope__x" in s["reason"]
    assert [e["type"] for e in r.events][-1] == "run_finished"


def test_resume_and_fork_refuse_tools(fake, agent_run):
    fake.add(reply("done"))
    first = agent_run("--tools", "read", "task.md")
    assert first.code == 0, first.stderr
    for argv in (("resume", str(first.run_dir), "more"), ("fork", str(first.run_dir), "more")):
        r = agent_run(*argv, "--tools", "read,bash")
        assert r.code == 2 and r.new_dirs == [], r.stderr
        assert "sealed" in r.stderr
    assert len(fake.requests) == 1


def test_a_childs_tools_are_picked_from_the_offered_ones(fake, workspace, agent_run):
    d = workspace / ".agents" / "agents"
    d.mkdir(parents=True)
    (d / "helper.md").write_text("---\nname: helper\ndescription: helps\ntools: read, bash, write\n---\nHelp.\n")
    (workspace / "p.jsonc").write_text('{"extends": "default", "risk": {"rules": [{"domain": "task", "pattern": '
                                       '"agent:**", "level": "medium"}]}, "permission": {"rules": '
                                       '[{"domain": "task", "pattern": "agent:**", "decision": "allow"}]}}')
    fake.add(reply(calls=[("task", {"description": "sub", "prompt": "CHILD-SUBTASK", "agent": "helper"})]),
             reply("done"))
    fake.route("CHILD-SUBTASK", reply("child done"))
    r = agent_run("--policy", "p.jsonc", "--tools", "read,task", "task.md")
    assert r.code == 0, r.stderr
    assert _offered(fake.requests[0]) == ["read", "task"]
    child = next(b for b in fake.requests if "CHILD-SUBTASK" in json.dumps(b["messages"][1:2]))
    assert _offered(child) == ["read"]  # the profile's bash and write: not offered to the parent, not to it
    assert r.of_type("subagent_started")[0]["tools"] == ["read"]
    assert r.summary["status"] == "success"
