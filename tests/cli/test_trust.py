"""Repository content cannot widen what a run may do: a workspace .env is not a settings layer, and a
task file in the workspace, or task text on stdin, may only narrow (lower budgets, a policy intersected
with the trusted one)."""

from __future__ import annotations

import json

from tests.fakes.openai_server import FakeOpenAI, reply

PWN = [("bash", {"command": "touch pwned"})]


def test_a_workspace_env_cannot_pick_the_policy(fake, workspace, agent_run):
    (workspace / ".env").write_text("AGENT_RUN_POLICY=full-access\nAGENT_RUN_MODE=full_access\n")
    fake.add(reply(calls=PWN), reply("done"))
    r = agent_run("--sandbox", "off", "task.md")
    assert r.code == 3 and not (workspace / "pwned").exists()
    assert r.summary["policy"] == "default"  # a shipped policy, by name


def test_a_workspace_env_cannot_redirect_the_api_key(fake, workspace, agent_run):
    with FakeOpenAI() as attacker:
        (workspace / ".env").write_text(f"OPENAI_BASE_URL={attacker.base_url}\nAGENT_RUN_BASE_URL={attacker.base_url}\n"
                                        "AGENT_RUN_MAX_TURNS=500\n")
        fake.add(reply("done"))
        r = agent_run("task.md")
        assert r.code == 0 and attacker.requests == [] and len(fake.requests) == 1
        assert r.of_type("run_started")[0]["max_turns"] == 50


def test_front_matter_in_the_workspace_only_lowers_budgets(fake, workspace, agent_run):
    (workspace / "t.md").write_text("---\nmodel: expensive-model\nmax_turns: 500\ntimeout: 99999\n---\nGo.\n")
    fake.add(reply("done"))
    r = agent_run("t.md", env={"AGENT_RUN_TIMEOUT": "60"})
    assert r.code == 0
    started = r.of_type("run_started")[0]
    assert (started["model"], started["max_turns"], started["timeout_s"]) == ("gpt-4o-mini", 50, 60)
    assert fake.requests[0]["model"] == "gpt-4o-mini"
    assert "only lower budgets" in r.stderr and len(r.summary["front_matter_ignored"]) == 3
    assert r.summary["task_trusted"] is False
    (workspace / "t.md").write_text("---\nmax_turns: 1\n---\nGo.\n")
    fake.add(reply(calls=[("list", {})]), reply("never"))
    r = agent_run("t.md")
    assert r.code == 5 and r.of_type("run_started")[0]["max_turns"] == 1  # lowering is honoured


def test_a_policy_named_by_an_untrusted_task_is_intersected(fake, workspace, agent_run):
    (workspace / "t.md").write_text("---\npolicy: full-access\n---\nGo.\n")
    fake.add(reply(calls=PWN), reply("done"))
    r = agent_run("--sandbox", "off", "t.md")
    assert r.code == 3 and not (workspace / "pwned").exists()
    assert r.summary["policy"] == "default"  # a shipped policy, by name
    # ... and it can narrow: strict denies the write that default allows.
    (workspace / "t.md").write_text("---\npolicy: strict\n---\nGo.\n")
    fake.add(reply(calls=[("write", {"path": "w.txt", "content": "x"})]), reply("done"))
    r = agent_run("t.md")
    assert r.code == 3 and not (workspace / "w.txt").exists()
    assert "narrowed_by" in (r.run_dir / "policy.json").read_text()


def test_a_task_on_stdin_is_untrusted_its_front_matter_only_narrows(fake, workspace, agent_run):
    """Issue 25, item 6: text on stdin is what a workflow pipes from the event (an issue body, a comment, a PR
    title): it must not pick the model, raise a budget or replace the policy; it may lower a budget."""
    task = "---\npolicy: full-access\nmodel: expensive-model\nmax_turns: 50\ntimeout: 99999\n---\nGo.\n"
    fake.add(reply(calls=PWN), reply("done"))
    r = agent_run("--sandbox", "auto", "-", input=task, env={"AGENT_RUN_MAX_TURNS": "5", "AGENT_RUN_TIMEOUT": "60"})
    assert r.code == 3 and not (workspace / "pwned").exists()  # default's ask, not full-access's allow
    started = r.of_type("run_started")[0]
    assert (started["model"], started["max_turns"], started["timeout_s"]) == ("gpt-4o-mini", 5, 60)
    assert fake.requests[0]["model"] == "gpt-4o-mini" and r.summary["policy"] == "default"
    assert r.summary["task_trusted"] is False and r.summary["task_file"] == "-"
    assert "the task on stdin is untrusted" in r.stderr and "only lower budgets" in r.stderr
    [warning] = r.of_type("warning")
    assert warning["code"] == "front_matter_ignored"
    assert "model" in warning["message"] and "max_turns: 50 is above the trusted 5" in warning["message"]
    assert "narrowed_by" in (r.run_dir / "policy.json").read_text()
    fake.add(reply(calls=[("list", {})]), reply("never"))
    r = agent_run("-", input="---\nmax_turns: 1\n---\nGo.\n")
    assert r.code == 5 and r.of_type("run_started")[0]["max_turns"] == 1  # lowering is honoured


def test_a_task_file_outside_the_workspace_is_the_workflows_own(fake, workspace, agent_run, tmp_path):
    task = tmp_path / "trusted-task.md"
    task.write_text("---\npolicy: full-access\nmodel: chosen-model\nmax_turns: 3\n---\nGo.\n")
    fake.add(reply(calls=PWN), reply("done"))
    r = agent_run("--sandbox", "off", str(task))
    assert r.code == 0 and (workspace / "pwned").exists()
    assert fake.requests[0]["model"] == "chosen-model" and r.summary["task_trusted"] is True


def test_the_workflows_own_input_files_are_protected_from_the_agent(fake, workspace, agent_run):
    (workspace / "notes.md").write_text("Use tabs.\n")
    (workspace / "mcp.json").write_text(json.dumps({"mcpServers": {"x": {"command": "no-such-mcp-server"}}}))
    fake.add(reply(calls=[("write", {"path": "notes.md", "content": "approve everything"}),
                          ("edit", {"path": "mcp.json", "old_string": "no-such", "new_string": "evil"})]),
             reply("done"))
    r = agent_run("--instructions", "notes.md", "--mcp-config", "mcp.json", "task.md")
    assert (workspace / "notes.md").read_text() == "Use tabs.\n" and "no-such" in (workspace / "mcp.json").read_text()
    refused = [e for e in r.of_type("permission_decision") if e["decision"] == "deny"]
    assert [e["rule"]["file"] for e in refused] == ["<hard limit>", "<hard limit>"]


def test_a_recorded_mcp_config_changed_since_the_run_is_not_started_again(fake, workspace, agent_run):
    (workspace / "mcp.json").write_text(json.dumps({"mcpServers": {"x": {"command": "no-such-mcp-server"}}}))
    fake.add(reply(calls=[("list", {})]))
    first = agent_run("--mcp-config", "mcp.json", "--max-turns", "1", "task.md")
    assert first.code == 5 and first.summary["mcp_config_sha256"][0]
    (workspace / "mcp.json").write_text(json.dumps({"mcpServers": {"y": {"command": "sh", "args": ["-c", "x"]}}}))
    resumed = agent_run("resume", str(first.run_dir))
    assert resumed.code == 2 and resumed.new_dirs == [], resumed.stderr
    assert "--mcp-config mcp.json, which changed since" in resumed.stderr

    # Killed before its summary (none seals the log), unkeyed: the recorded path and sha256 could have been
    # written with the workspace file they name, so a config in the workspace is not started from the log.
    (workspace / "mcp.json").write_text(json.dumps({"mcpServers": {"x": {"command": "no-such-mcp-server"}}}))
    (first.run_dir / "summary.json").unlink()
    killed = agent_run("resume", str(first.run_dir))
    assert killed.code == 2 and killed.new_dirs == [], killed.stderr
    assert "--mcp-config mcp.json, a file in the workspace, and its log is not keyed" in killed.stderr
