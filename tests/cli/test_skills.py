"""Skills (issue 14): the index in the prompt, the body only in the `skill` result, allowed-tools narrowing
(never widening) — with realistic skills in the open SKILL.md format (tests/fixtures/skills)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.fakes.openai_server import reply

FIXTURES = Path(__file__).parents[1] / "fixtures" / "skills"


def _install(workspace: Path, where: str = ".agents/skills") -> None:
    shutil.copytree(FIXTURES, workspace / where)


def _result(fake, i: int) -> str:
    return fake.requests[i]["messages"][-1]["content"]


def test_the_index_is_in_the_prompt_and_the_body_only_in_the_tool_result(fake, workspace, agent_run):
    _install(workspace, ".claude/skills")
    fake.add(reply(calls=[("skill", {"name": "release-notes"})]),
             reply(calls=[("read", {"path": ".claude/skills/release-notes/template.md"})]), reply("notes"))
    r = agent_run("task.md")
    assert r.code == 0, r.stderr
    system = fake.requests[0]["messages"][0]["content"]
    assert "- release-notes: Draft release notes" in system and "- lint-fix: Fix lint errors" in system
    assert "git describe --tags" not in json.dumps(fake.requests[0])  # the body is not in the prompt
    body = _result(fake, 1)
    assert "# Skill: release-notes" in body and "git describe --tags --abbrev=0" in body
    assert "- template.md" in body and "only these tools may be called: bash(git log *)" in body
    assert "### Added" in _result(fake, 2)  # its files are read on demand (Read is allowed by the skill)
    assert fake.requests[1]["messages"][0] == fake.requests[0]["messages"][0]  # the prefix did not change
    assert {s["name"] for s in r.summary["skills"]} == {"release-notes", "lint-fix"}


def test_allowed_tools_narrow_but_never_widen(fake, workspace, agent_run):
    _install(workspace)
    fake.add(reply(calls=[("skill", {"name": "release-notes"})]),
             reply(calls=[("list", {})]),  # the policy allows list; the skill does not list it
             reply(calls=[("bash", {"command": "git log --oneline"})]),  # the skill allows it; the policy asks
             reply(calls=[("skill", {"name": "lint-fix"})]),
             reply(calls=[("bash", {"command": "git log --oneline"})]),  # not in lint-fix's list any more
             reply("done"))
    r = agent_run("--sandbox", "off", "task.md")
    refused = json.loads(_result(fake, 2))["error"]
    assert refused["type"] == "ToolNotAllowed" and "allows only" in refused["message"]
    assert refused["skill"] == "release-notes"
    asked = json.loads(_result(fake, 3))["error"]
    assert asked["type"] == "ApprovalRequired"  # the skill listing bash did not approve it
    after = json.loads(_result(fake, 5))["error"]
    assert after["type"] == "ToolNotAllowed" and after["skill"] == "lint-fix"
    assert r.code == 3  # only the policy's denial counts as a denial of the run
    assert [d["tool"] for d in r.summary["denials"]] == ["bash"]


def test_skills_from_a_trusted_directory_and_none_without_skills(fake, workspace, agent_run):
    fake.add(reply("no skills here"))
    agent_run("task.md")
    assert "skill" not in [t["function"]["name"] for t in fake.requests[0]["tools"]]
    fake.add(reply(calls=[("skill", {"name": "lint-fix"})]), reply("ok"))
    r = agent_run("--skills", str(FIXTURES), "task.md")
    assert r.code == 0, r.stderr
    assert "ruff check --output-format concise" in _result(fake, 2)
    assert all(s["trusted"] for s in r.summary["skills"])


def test_a_resumed_run_can_still_load_skills(fake, workspace, agent_run):
    _install(workspace)
    fake.add(reply(calls=[("list", {})]))
    first = agent_run("--max-turns", "1", "task.md")
    assert first.code == 5
    fake.add(reply(calls=[("skill", {"name": "lint-fix"})]), reply("ok"))
    resumed = agent_run("resume", str(first.run_dir))
    assert resumed.code == 0, resumed.stderr
    assert "# Skill: lint-fix" in _result(fake, -1)
    assert fake.requests[-1]["tools"] == fake.requests[0]["tools"]
