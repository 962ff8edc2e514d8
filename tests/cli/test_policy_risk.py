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
