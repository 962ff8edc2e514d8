"""The action's run step with an empty task (issue 31): `agent-run github respond` for the event, the job's token
for it alone; the example workflow that asks it from a mention."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.fakes.github_server import TOKEN, FakeGitHub
from tests.github import payloads
from tests.test_workflows import PLACEHOLDER, ROOT, action_step, load, run_step, step_env  # noqa: F401  (step_env: a fixture)

SHOW = """#!/bin/sh
for a in "$@"; do echo "arg=$a"; done
echo "token=${GITHUB_TOKEN:-unset}"
echo "input-token=${INPUT_GITHUB_TOKEN:-unset}"
echo "login=${AGENT_RUN_GITHUB_LOGIN:-unset}"
exit 0
"""


def _respond_env(env: dict[str, str], tmp_path: Path, event: str, **more: str) -> dict[str, str]:
    stand_in = tmp_path / "venv" / "bin" / "agent-run"
    stand_in.write_text(SHOW)
    return env | {"INPUT_TASK": "", "INPUT_TRIGGER_PHRASE": "@agent-run", "INPUT_ALLOWED_ACTORS": "",
                       "INPUT_GITHUB_TOKEN": "ghs_fromTheInput", "GITHUB_EVENT_NAME": event} | more


def test_an_empty_task_on_a_comment_runs_github_respond_with_the_token_for_it_alone(step_env, tmp_path):  # noqa: F811
    env = _respond_env(step_env, tmp_path, "issue_comment", INPUT_ALLOWED_ACTORS="renovate[bot]")
    proc, out = run_step(action_step("run")["run"], env, tmp_path / "ws", tmp_path)
    assert proc.returncode == 0, out
    args = [line.removeprefix("arg=") for line in out.splitlines() if line.startswith("arg=")]
    assert args[:6] == ["github", "respond", "--trigger-phrase", "@agent-run", "--allowed-actors", "renovate[bot]"]
    assert args[6:8] == ["--policy", "strict"] and "-" not in args  # no task argument, nothing on stdin
    assert "token=ghs_fromTheInput" in out and "input-token=unset" in out


@pytest.mark.parametrize(("jobs", "login"), [("true", "github-actions[bot]"), ("false", "my-app[bot]")])
def test_the_login_is_named_when_the_token_is_the_jobs_own(step_env, tmp_path, jobs, login):  # noqa: F811
    """Issue 41, item 9: the job's token writes as github-actions[bot] (GET /user is refused to it); another token's
    login is whatever the job's environment says, else the runner learns it from its first comment."""
    env = _respond_env(step_env, tmp_path, "issue_comment", INPUT_GITHUB_TOKEN_IS_JOBS=jobs,
                       AGENT_RUN_GITHUB_LOGIN="my-app[bot]")
    proc, out = run_step(action_step("run")["run"], env, tmp_path / "ws", tmp_path)
    assert proc.returncode == 0 and f"login={login}" in out.splitlines(), out
    assert action_step("run")["env"]["INPUT_GITHUB_TOKEN_IS_JOBS"] == "${{ inputs.github-token == github.token }}"


def test_an_empty_task_on_another_event_is_a_usage_error(step_env, tmp_path):  # noqa: F811
    env = _respond_env(step_env, tmp_path, "push")
    proc, out = run_step(action_step("run")["run"], env, tmp_path / "ws", tmp_path)
    assert proc.returncode == 2 and "::error title=agent-run: no task::" in out
    assert "status=usage_error" in (tmp_path / "output").read_text()


def test_a_mention_less_comment_is_skipped_by_the_real_agent_run_through_the_action(step_env, tmp_path,  # noqa: F811
                                                                                    fake):
    stand_in = tmp_path / "venv" / "bin" / "agent-run"
    stand_in.unlink()
    stand_in.symlink_to(Path(sys.executable).parent / "agent-run")
    event = tmp_path / "event.json"
    event.write_text(json.dumps(payloads.issue_comment("thanks, looks good")))
    with FakeGitHub() as gh:
        env = step_env | {"INPUT_TASK": "", "INPUT_TRIGGER_PHRASE": "@agent-run", "INPUT_ALLOWED_ACTORS": "",
                          "INPUT_GITHUB_TOKEN": TOKEN, "GITHUB_EVENT_NAME": "issue_comment",
                          "GITHUB_EVENT_PATH": str(event), "GITHUB_API_URL": gh.url, "GITHUB_ACTIONS": "true",
                          "INPUT_BASE_URL": fake.base_url, "INPUT_API_KEY": "sk-test", "INPUT_SANDBOX": "auto"}
        proc, out = run_step(action_step("run")["run"], env, tmp_path / "ws", tmp_path, timeout=180)  # a hang only
        assert proc.returncode == 0, out
        assert gh.requests == [] and fake.requests == []
    assert "\nskipped\n" in (tmp_path / "output").read_text() and "::notice" in out
    assert not (tmp_path / "ws" / ".agent-run").exists()


def test_the_mention_workflow_has_the_minimal_permissions_and_no_task():
    workflow = load(ROOT / "examples" / "workflows" / "mention.yml")
    assert workflow["permissions"] == {"contents": "read", "issues": "write", "pull-requests": "write"}
    steps = workflow["jobs"]["respond"]["steps"]
    agent = next(s for s in steps if s.get("uses") == PLACEHOLDER)
    assert "task" not in agent["with"] and agent["with"]["trigger-phrase"] == "@agent-run"
    assert set(workflow["on"]) == {"issue_comment", "pull_request_review_comment", "issues"}
    inputs = load(ROOT / "action.yml")["inputs"]
    assert inputs["task"].get("required") is False and inputs["trigger-phrase"]["default"] == "@agent-run"
    assert inputs["allowed-actors"]["default"] == "" and inputs["github-token"]["default"] == "${{ github.token }}"
