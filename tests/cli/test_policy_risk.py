"""Risk per call (issue 34): each call's risk from its tool and targets, the policy's `risk` section (rules, last
match wins; askAtOrAbove turns an allow into ask, which --approve answers), shown by `policy explain`."""

from __future__ import annotations

import json

from tests.fakes.audit import audit_of
from tests.fakes.openai_server import reply

ASK_MEDIUM = """{ "extends": "default",
  "risk": { "askAtOrAbove": "medium",
            "rules": [ { "domain": "edit", "pattern": "workspace:notes/**", "level": "low" } ] } }"""


def test_ask_at_or_above_asks_what_the_policy_allows_and_approve_answers_it(fake, workspace, agent_run):
    (workspace / "p.jsonc").write_text(ASK_MEDIUM, encoding="utf-8")
    calls = [("write", {"path": "notes/a.md", "content": "a\n"}), ("write", {"path": "b.txt", "content": "b\n"})]
    fake.add(reply(calls=calls), reply("done"))
    r = agent_run("--policy", "p.jsonc", "task.md")
    assert r.code == 3, r.stderr
    low, medium = r.of_type("permission_decision")
    assert (low["risk"], low["decision"], low["approval_scope"]) == ("low", "allow", "policy")
    assert (medium["risk"], medium["policy_decision"], medium["decision"]) == ("medium", "ask", "deny")
    assert medium["targets"][0]["note"].startswith("risk medium") and medium["targets"][0]["risk"] == "medium"
    assert medium["approve"] == ["edit:workspace:b.txt"]
    assert (workspace / "notes" / "a.md").is_file() and not (workspace / "b.txt").exists()
    assert [x["risk"] for x in audit_of(r.run_dir)] == ["low", "medium"]

    fake.add(reply(calls=calls), reply("done"))
    again = agent_run("--policy", "p.jsonc", "--approve", "edit:workspace:b.txt", "task.md")
    assert again.code == 0, again.stderr
    assert [(d["decision"], d["approval_scope"]) for d in again.of_type("permission_decision")] == [
        ("allow", "policy"), ("allow", "run")]


def test_policy_explain_shows_the_risk(agent_run, workspace):
    (workspace / "p.jsonc").write_text(ASK_MEDIUM, encoding="utf-8")
    text = agent_run("policy", "explain", "--policy", "p.jsonc", "edit", "b.txt")
    assert text.code == 0, text.stderr
    assert "risk: medium" in text.stdout.splitlines()
    assert text.stdout.splitlines()[2].startswith("rule: risk.askAtOrAbove (risk medium: the policy asks")
    data = json.loads(agent_run("policy", "explain", "--policy", "p.jsonc", "--json", "edit", "notes/x.md").stdout)
    assert (data["risk"], data["headless_decision"], data["targets"][0]["risk"]) == ("low", "allow", "low")
    outside = json.loads(agent_run("policy", "explain", "--json", "read", "/etc/hostname").stdout)
    assert outside["risk"] == "high"  # outside the workspace
    fetch = json.loads(agent_run("policy", "explain", "--json", "web_fetch", "https://example.com/").stdout)
    assert fetch["risk"] == "high"  # the network


def test_a_bad_risk_pattern_is_a_located_policy_error(agent_run, workspace):
    (workspace / "p.jsonc").write_text('{ "risk": { "rules": [\n  { "domain": "bash", "pattern": "regex:(", '
                                       '"level": "low" } ] } }', encoding="utf-8")
    r = agent_run("policy", "check", "p.jsonc")
    assert r.code == 2 and "p.jsonc:2:" in r.stdout + r.stderr


# Issue 41 item 10: the shipped policies ask at or above `high`; a command's effect sets its risk.
GIT_AND_RM = """{ "extends": "ci", "permission": { "rules": [
  { "domain": "bash", "pattern": "shell:git *", "decision": "allow" },
  { "domain": "bash", "pattern": "shell:rm *", "decision": "allow" } ] } }"""


def test_default_asks_before_the_delete_tool_deletes(fake, workspace, agent_run):
    (workspace / "file.txt").write_text("keep\n", encoding="utf-8")
    fake.add(reply(calls=[("delete", {"path": "file.txt"})]), reply("could not"))
    r = agent_run("--sandbox", "off", "task.md")
    assert r.code == 3, r.stderr
    [d] = r.of_type("permission_decision")
    assert (d["risk"], d["policy_decision"], d["decision"]) == ("high", "ask", "deny")
    assert d["targets"][0]["note"].startswith("risk high: the policy asks at or above high")
    assert (workspace / "file.txt").read_text(encoding="utf-8") == "keep\n"
    assert "agent-run replay" in r.stderr and r.summary["denials"][0]["approve"] == ["edit:workspace:file.txt"]
    # An allow rule would change nothing (the policy allows it already): policy suggest says how to let it through.
    suggested = agent_run("policy", "suggest", str(r.run_dir)).stdout
    assert '"decision": "allow"' not in suggested
    assert "not suggested: workspace:file.txt (asked for its risk" in suggested and "risk.rules" in suggested


def test_an_allowed_command_that_deletes_or_rewrites_history_is_asked(fake, workspace, agent_run):
    (workspace / "p.jsonc").write_text(GIT_AND_RM, encoding="utf-8")
    (workspace / "file.txt").write_text("keep\n", encoding="utf-8")
    calls = [("bash", {"command": "ls"}), ("bash", {"command": "rm file.txt"}),
             ("bash", {"command": "git reset --hard"})]
    fake.add(reply(calls=calls), reply("could not"))
    r = agent_run("--policy", "p.jsonc", "--sandbox", "off", "task.md")
    assert r.code == 3, r.stderr
    ls, rm, reset = r.of_type("permission_decision")
    assert (ls["decision"], ls["risk"]) == ("allow", "medium")
    for d, why in ((rm, "rm deletes files"), (reset, "git reset --hard discards")):
        assert (d["risk"], d["policy_decision"], d["decision"]) == ("high", "ask", "deny")
        assert why in d["targets"][0]["note"] and d["targets"][0]["note"].startswith("risk high")
    assert "file.txt" in r.of_type("tool_result")[0]["content"]  # ls ran
    assert (workspace / "file.txt").is_file() and "agent-run replay" in r.stderr
    assert [x["approve"] for x in r.summary["denials"]] == [["bash:shell:rm file.txt"],
                                                           ["bash:shell:git reset --hard"]]


def test_the_old_behaviour_is_one_line_away(agent_run, workspace):
    (workspace / "p.jsonc").write_text(GIT_AND_RM, encoding="utf-8")
    (workspace / "old.jsonc").write_text('{ "extends": "p.jsonc", "risk": { "askAtOrAbove": null } }',
                                         encoding="utf-8")
    asked = json.loads(agent_run("policy", "explain", "--policy", "p.jsonc", "--json", "bash",
                                 "git push --force origin main").stdout)
    assert (asked["risk"], asked["headless_decision"]) == ("high", "deny")
    old = json.loads(agent_run("policy", "explain", "--policy", "old.jsonc", "--json", "bash",
                               "git push --force origin main").stdout)
    assert (old["risk"], old["headless_decision"]) == ("high", "allow")
