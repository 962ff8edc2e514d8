"""`--preset small` (and AGENT_RUN_PRESET) through the CLI (issue 44, item 4): the tools read, list, grep, edit and
bash, a short "act, don't describe" rule in the runner's contract, the task's `check:` command shown to the model;
the first request stays within 1,400 tokens (chars/4 of what the server received, as tests/tools/test_tool_budget.py
measures the tools array); the rerun command repeats it, batch and github respond take it."""

from __future__ import annotations

import json

from click.testing import CliRunner

from runner.cli.batch import make_batch
from runner.cli.group import cli
from tests.fakes.openai_server import reply

FIRST_REQUEST_BUDGET = 1_400
SMALL = ["read", "list", "grep", "edit", "bash"]


def _offered(request: dict) -> list[str]:
    return [t["function"]["name"] for t in request.get("tools") or []]


def test_preset_small_narrows_the_tools_adds_the_rule_and_shows_the_check(fake, workspace, agent_run):
    (workspace / "t.md").write_text("---\ncheck: python3 test_calc.py\n---\nFix calc.py.\n", encoding="utf-8")
    fake.add(reply(calls=[("bash", {"command": "make deploy"})]), reply("could not"))
    r = agent_run("--preset", "small", "t.md")
    first = fake.requests[0]
    assert _offered(first) == SMALL
    system, task = first["messages"][0]["content"], first["messages"][1]["content"]
    assert "Act, don't describe" in system
    assert "Fix calc.py." in task and "`python3 test_calc.py`" in task
    sent = json.dumps({"messages": first["messages"], "tools": first["tools"]}, ensure_ascii=False,
                      separators=(",", ":"))
    assert len(sent) / 4 <= FIRST_REQUEST_BUDGET, f"{len(sent) / 4:.0f} tokens"
    denied = r.of_type("tool_result")[0]
    assert denied["error_type"] == "ApprovalRequired" and "--preset small" in denied["content"]  # the rerun words


def test_agent_run_preset_from_the_environment_and_without_a_check(fake, workspace, agent_run):
    fake.add(reply("done"))
    r = agent_run("task.md", env={"AGENT_RUN_PRESET": "small"})
    assert r.code == 0, r.stderr
    first = fake.requests[0]
    assert _offered(first) == SMALL and "Act, don't describe" in first["messages"][0]["content"]
    assert first["messages"][1]["content"] == "Do the thing.\n"  # no check: nothing added to the task


def test_batch_and_github_respond_take_it():
    assert "--preset" in CliRunner().invoke(make_batch(), ["--help"], terminal_width=200).output
    assert "--preset" in CliRunner().invoke(cli, ["github", "respond", "--help"], terminal_width=200).output
