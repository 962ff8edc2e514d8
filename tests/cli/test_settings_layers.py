"""Settings reach the run through every layer: flag > env > --env-file > policy > default; repository
content (a workspace .env, a task file in the workspace) can only narrow."""

from __future__ import annotations

from tests.fakes.openai_server import reply


def test_env_file_sets_model_and_the_workspace_env_is_not_read(fake, workspace, agent_run, tmp_path):
    (workspace / ".env").write_text("AGENT_RUN_MODEL=from-workspace-dotenv\n")
    named = tmp_path / "job.env"
    named.write_text("AGENT_RUN_MODEL=from-env-file\n")
    fake.add(reply("a"), reply("b"))
    assert agent_run("task.md").code == 0
    assert agent_run("--env-file", str(named), "task.md").code == 0
    assert [r["model"] for r in fake.requests] == ["gpt-4o-mini", "from-env-file"]


def test_env_beats_env_file_and_flag_beats_env(fake, workspace, agent_run, tmp_path):
    named = tmp_path / "job.env"
    named.write_text("AGENT_RUN_MODEL=from-env-file\n")
    fake.add(reply("a"), reply("b"))
    assert agent_run("--env-file", str(named), "task.md", env={"AGENT_RUN_MODEL": "from-env"}).code == 0
    assert agent_run("--env-file", str(named), "--model", "from-flag", "task.md",
                     env={"AGENT_RUN_MODEL": "from-env"}).code == 0
    assert [r["model"] for r in fake.requests] == ["from-env", "from-flag"]
    r = agent_run("--env-file", str(tmp_path / "missing.env"), "task.md")
    assert r.code == 2 and "--env-file" in r.summary["reason"]


def test_policy_budget_is_below_env(fake, workspace, agent_run):
    (workspace / "p.jsonc").write_text('{"extends": "default", "budget": {"maxTurns": 1}}')
    fake.add(*[reply(calls=[("list", {})])] * 4)
    r = agent_run("--policy", "p.jsonc", "task.md")
    assert r.code == 5 and len(fake.requests) == 1
    r = agent_run("--policy", "p.jsonc", "task.md", env={"AGENT_RUN_MAX_TURNS": "2"})
    assert r.code == 5 and r.summary["turns"] == 2


def test_policy_named_by_env(fake, workspace, agent_run):
    fake.add(reply(calls=[("write", {"path": "w.txt", "content": "x"})]), reply("done"))
    r = agent_run("task.md", env={"AGENT_RUN_POLICY": "strict"})
    assert r.code == 3 and r.summary["policy"] == "strict"


def test_no_key_and_no_base_url_is_a_usage_error(fake, workspace, agent_run):
    r = agent_run("task.md", env={"OPENAI_API_KEY": "", "OPENAI_BASE_URL": ""})
    assert r.code == 2 and "OPENAI_API_KEY" in r.summary["reason"]


def test_invalid_env_setting_is_a_usage_error_naming_the_variable(fake, workspace, agent_run, tmp_path):
    r = agent_run("task.md", env={"AGENT_RUN_MAX_TURNS": "lots"})
    assert r.code == 2
    assert r.summary["reason"] == "AGENT_RUN_MAX_TURNS: Input should be a valid integer, unable to parse string as " \
                                  "an integer (got 'lots')"
    assert "AGENT_RUN_MAX_TURNS: " in r.stderr
    r = agent_run("task.md", env={"AGENT_RUN_STREAM": "maybe"})
    assert r.code == 2 and r.summary["reason"].startswith("AGENT_RUN_STREAM: Input should be a valid boolean")
    named = tmp_path / "job.env"
    named.write_text("AGENT_RUN_TIMEOUT=0\n")
    r = agent_run("--env-file", str(named), "task.md")
    assert r.code == 2
    assert r.summary["reason"] == f"AGENT_RUN_TIMEOUT in {named}: Input should be greater than 0 (got '0')"
    assert fake.requests == []
