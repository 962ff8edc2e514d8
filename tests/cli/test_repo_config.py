"""The repository's config file (issue 46 item 4): `.agents/agent-run.toml` in the workspace is repository content,
so it may only narrow, as an untrusted task's front matter may; it is protected like the skills directories."""

from __future__ import annotations

from tests.fakes.openai_server import reply


def test_the_repository_config_only_narrows_and_names_what_it_ignored(fake, workspace, agent_run):
    (workspace / ".agents").mkdir()
    (workspace / ".agents" / "agent-run.toml").write_text('[agents.runtime]\nmax_turns = 1\nmodel = "theirs"\n')
    fake.add(reply(calls=[("list", {})]), reply(calls=[("list", {})]), reply("never"))
    r = agent_run("task.md")
    assert r.code == 5 and r.summary["budget"]["name"] == "max_turns", r.stderr
    assert fake.requests[0]["model"] != "theirs"
    [warning] = [w for w in r.of_type("warning") if w["code"] == "config_ignored"]
    assert ".agents/agent-run.toml" in warning["message"] and "agents.runtime.model" in warning["message"]


def test_the_agent_cannot_write_the_repository_config(fake, workspace, agent_run):
    fake.add(reply(calls=[("write", {"path": ".agents/agent-run.toml", "content": "max_turns = 1\n"})]),
             reply("done"))
    r = agent_run("task.md")
    assert r.code == 3 and r.of_type("tool_result")[0]["error_type"] == "ToolNotAllowed", r.stderr


def test_a_repository_value_that_is_no_number_is_ignored_not_a_traceback(fake, workspace, agent_run):
    # Repository content chooses the type too: a string or a table where a budget goes is named, never compared.
    (workspace / ".agents").mkdir()
    (workspace / ".agents" / "agent-run.toml").write_text('max_turns = "1"\nmax_tokens = true\n')
    fake.add(reply("done"))
    r = agent_run("task.md")
    assert r.code == 0, r.stderr
    [warning] = [w for w in r.of_type("warning") if w["code"] == "config_ignored"]
    assert "max_turns" in warning["message"] and "max_tokens" in warning["message"]


def test_a_repository_config_behind_a_symlinked_directory_is_not_read(fake, workspace, agent_run, tmp_path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "agent-run.toml").write_text("max_turns = 1\n")
    (workspace / ".agents").symlink_to(outside)
    fake.add(reply(calls=[("list", {})]), reply("done"))
    r = agent_run("task.md")
    assert r.code == 0, r.stderr
