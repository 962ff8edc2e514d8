"""The user's config file (issue 46 item 4): $XDG_CONFIG_HOME/agent-run/config.toml, a layer below the policy and
above the defaults, in the flat shape or the ADR's nested one (`agents.runtime`), through the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

from runner.engine.settings import COMPACTION_KEYS
from tests.fakes.openai_server import reply

ROOT = Path(__file__).resolve().parents[2]


def _config(tmp_path, text: str) -> dict[str, str]:
    (tmp_path / "xdg" / "agent-run").mkdir(parents=True)
    (tmp_path / "xdg" / "agent-run" / "config.toml").write_text(text)
    return {"XDG_CONFIG_HOME": str(tmp_path / "xdg")}


def test_the_user_config_sets_a_setting_below_the_environment(fake, workspace, agent_run, tmp_path):
    env = _config(tmp_path, 'max_turns = 1\nmodel = "from-user-config"\n')
    fake.add(reply(calls=[("list", {})]), reply(calls=[("list", {})]), reply("never"))
    r = agent_run("task.md", env={**env, "AGENT_RUN_MODEL": "from-env"})
    assert r.code == 5, r.stderr
    assert r.summary["budget"]["name"] == "max_turns" and fake.requests[0]["model"] == "from-env"


def test_the_nested_shape_is_the_flat_one_and_both_at_once_are_refused(fake, workspace, agent_run, tmp_path):
    env = _config(tmp_path, "max_turns = 3\n[agents.runtime]\nmax_turns = 1\n")
    r = agent_run("task.md", env=env)
    assert r.code == 2 and "max_turns" in r.stderr and "both" in r.stderr and not fake.requests, r.stderr
    (tmp_path / "xdg" / "agent-run" / "config.toml").write_text("[agents.runtime]\nmax_turns = 1\n")
    fake.add(reply(calls=[("list", {})]), reply("never"))
    r = agent_run("task.md", env=env)
    assert r.code == 5 and r.summary["budget"]["name"] == "max_turns", r.stderr


def test_config_show_names_each_settings_value_and_source(workspace, agent_run, tmp_path):
    env = _config(tmp_path, "[agents.runtime]\nmax_turns = 7\n")
    r = agent_run("config", "show", env={**env, "AGENT_RUN_TIMEOUT": "60"})
    assert r.code == 0, r.stderr
    lines = {line.split()[0]: line for line in r.stdout.splitlines() if line.strip()}
    assert lines["max_turns"].split()[1:] == ["7", "user", str(tmp_path / "xdg/agent-run/config.toml"),
                                             "agents.runtime.max_turns"]
    assert lines["timeout"].split()[1:] == ["60.0", "environment", "AGENT_RUN_TIMEOUT"]
    assert lines["parallel_calls"].split()[1:] == ["4", "default"]


def test_config_show_names_the_policy_sections_mode_and_repository_config_with_their_source(workspace, agent_run,
                                                                                           tmp_path):
    # Beside the settings: the sections the user's config may set beneath the policy's (nested or flat), its mode,
    # and what the workspace's repository config lowers; each value where a run takes it from.
    env = _config(tmp_path, 'max_turns = 7\nmode = "full_access"\n[doomLoop]\nmaxAttempts = 2\n[compaction]\n'
                  'contextWindow = 65536\n[agents.runtime.truncation]\npreset = "compact"\n'
                  '[agents.runtime.permission]\nmaxDenials = 9\n')
    user = str(tmp_path / "xdg/agent-run/config.toml")
    (workspace / ".agents").mkdir()
    (workspace / ".agents" / "agent-run.toml").write_text("max_turns = 4\n")
    (tmp_path / "p.json").write_text(json.dumps({"compaction": {"summarizeAt": 0.6}, "sandbox": {"mode": "off"}}))
    r = agent_run("config", "show", "--policy", str(tmp_path / "p.json"), env=env)
    assert r.code == 0, r.stderr
    lines = {line.split()[0]: line.split()[1:] for line in r.stdout.splitlines() if line.strip()}
    assert lines["max_turns"] == ["4", "repository", str(workspace / ".agents/agent-run.toml"), "max_turns"]
    assert lines["context_window"] == ["65536", "user", user, "compaction.contextWindow"]
    assert lines["compaction.summarizeAt"] == ["0.6", "policy", str(tmp_path / "p.json"), "compaction.summarizeAt"]
    assert lines["compaction.recentTurns"] == ["3", "default"]
    assert lines["doomLoop.maxAttempts"] == ["2", "user", user, "doomLoop.maxAttempts"]
    assert lines["truncation.preset"] == ["compact", "user", user, "agents.runtime.truncation.preset"]
    assert lines["truncation.maxLines"] == ["500", "user", user, "agents.runtime.truncation.preset"]
    assert lines["mode"] == ["full_access", "user", user, "mode"]
    assert lines["permission.maxDenials"] == ["9", "user", user, "agents.runtime.permission.maxDenials"]
    schema = json.loads((ROOT / "policies/policy.schema.json").read_text())["properties"]
    for section in ("compaction", "truncation", "doomLoop"):  # every key: as a setting (COMPACTION_KEYS) or itself
        shown = {n.split(".", 1)[1] for n in lines if n.startswith(f"{section}.")} | (
            set(COMPACTION_KEYS) if section == "compaction" else set())
        assert shown == set(schema[section]["properties"]), section


def test_the_agent_cannot_write_the_user_config(fake, workspace, agent_run):
    # XDG_CONFIG_HOME reaches commands: a config the agent wrote would widen the next run (its base_url, its budgets).
    env = {"XDG_CONFIG_HOME": str(workspace / ".xdg")}
    fake.add(reply(calls=[("write", {"path": ".xdg/agent-run/config.toml", "content": "max_turns = 999\n"})]),
             reply("done"))
    r = agent_run("task.md", env=env)
    assert r.code == 3 and r.of_type("tool_result")[0]["error_type"] == "ToolNotAllowed", r.stderr
    assert not (workspace / ".xdg" / "agent-run" / "config.toml").exists()


def test_the_user_configs_nested_policy_sections_sit_below_the_policys(fake, workspace, agent_run, tmp_path):
    env = _config(tmp_path, '[agents.runtime.truncation]\npreset = "compact"\n')
    (workspace / "mid.txt").write_text("".join(f"line {i:04d} {'y' * 80}\n" for i in range(300)))  # ~27 KB
    fake.add(reply(calls=[("read", {"path": "mid.txt"})]), reply("ok"))
    r = agent_run("task.md", env=env)
    assert r.code == 0, r.stderr
    assert r.of_type("tool_result")[0]["details"]["truncated"] is True  # the default policy sets no preset


def test_the_user_configs_mode_and_rules_sit_below_the_policys(fake, workspace, agent_run, tmp_path):
    # The ADR's `mode.default` and `permission.rules`: the user's rules come before the policy's (as an extended
    # file's do), so the policy's own rules decide; its mode applies since the policy sets none.
    rule = '[[agents.runtime.permission.rules]]\ndomain = "bash"\npattern = "shell:{} *"\ndecision = "allow"\n'
    env = _config(tmp_path, '[agents.runtime.mode]\ndefault = "full_access"\n' + rule.format("echo")
                  + rule.format("rm"))
    deny_rm = {"domain": "bash", "pattern": "shell:rm *", "decision": "deny"}
    (tmp_path / "p.json").write_text(json.dumps({"permission": {"rules": [deny_rm]}, "sandbox": {"mode": "off"}}))
    fake.add(reply(calls=[("bash", {"command": "echo hi"}), ("bash", {"command": "rm -f x"})]), reply("done"))
    r = agent_run("--policy", str(tmp_path / "p.json"), "task.md", env=env)
    assert r.of_type("run_started")[0]["mode"] == "full_access", r.stderr
    decided = {e["targets"][0]["target"]: (e["decision"], e["rule"]["file"]) for e in r.of_type("permission_decision")}
    assert decided == {"shell:echo hi": ("allow", str(tmp_path / "xdg/agent-run/config.toml")),
                       "shell:rm -f x": ("deny", str(tmp_path / "p.json"))}, r.stderr
    # policy explain decides as the run did: the user's config beneath the policy there too
    shown = agent_run("policy", "explain", "--policy", str(tmp_path / "p.json"), "--json", "bash", "echo hi", env=env)
    explained = json.loads(shown.stdout)
    assert (explained["decision"], explained["rule"]["file"]) == ("allow", str(tmp_path / "xdg/agent-run/config.toml"))
    # … and names the user's rule the policy's shadows (the same pattern, later): it never decides
    assert shown.stderr.count("note:") == 1 and (
        f"the user's config rule 1 (`bash shell:rm *` allow) is shadowed by policy rule 0 of {tmp_path / 'p.json'}: "
        "`bash shell:rm *` deny; it never decides") in shown.stderr, shown.stderr


def test_config_show_names_a_user_rule_the_policy_shadows(workspace, agent_run, tmp_path):
    # Under the shipped `default`, whose first rule is `* **` ask, the user's rules (before the policy's: the last
    # match decides, the policy above the user's config) never decide: config show says so.
    env = _config(tmp_path, '[[permission.rules]]\ndomain = "bash"\npattern = "shell:echo *"\ndecision = "allow"\n')
    r = agent_run("config", "show", "--policy", "default", env=env)
    assert r.code == 0, r.stderr
    [line] = [line for line in r.stdout.splitlines() if line.startswith("permission.rules.")]
    assert line.split(" ", 5) == [
        "permission.rules.0", '{"domain":"bash","pattern":"shell:echo', '*","decision":"allow"}', "user",
        str(tmp_path / "xdg/agent-run/config.toml"),
        "permission.rules.0 (shadowed by policy rule 0 of the shipped `default`: `* **` ask; it never decides)"]
