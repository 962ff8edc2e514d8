"""The action's `review` input and examples/workflows/pr-review.yml (issue 32): `github respond --review` on a
pull request with an empty task, `--findings` with a task; the workflow's minimal permissions and its SARIF upload
(schema and pinning are checked for every workflow by tests/test_workflows.py)."""

from __future__ import annotations

from tests.test_action_respond import SHOW
from tests.test_workflows import PLACEHOLDER, ROOT, action_step, load, run_step, step_env  # noqa: F401  (step_env: a fixture)

WORKFLOW = ROOT / "examples" / "workflows" / "pr-review.yml"


def _args(out: str) -> list[str]:
    return [line.removeprefix("arg=") for line in out.splitlines() if line.startswith("arg=")]


def test_review_adds_review_to_respond_and_findings_to_a_task(step_env, tmp_path):  # noqa: F811
    (tmp_path / "venv" / "bin" / "agent-run").write_text(SHOW)
    (tmp_path / "ws" / "task.md").write_text("review it\n")
    respond = step_env | {"INPUT_TASK": "", "INPUT_TRIGGER_PHRASE": "@agent-run", "INPUT_ALLOWED_ACTORS": "",
                          "INPUT_GITHUB_TOKEN": "ghs_x", "GITHUB_EVENT_NAME": "pull_request", "INPUT_REVIEW": "true"}
    proc, out = run_step(action_step("run")["run"], respond, tmp_path / "ws", tmp_path)
    assert proc.returncode == 0, out
    assert _args(out)[:5] == ["github", "respond", "--trigger-phrase", "@agent-run", "--review"]
    assert "--findings" not in _args(out)  # --review implies it
    task = step_env | {"INPUT_TASK": "task.md", "INPUT_REVIEW": "true"}
    proc, out = run_step(action_step("run")["run"], task, tmp_path / "ws", tmp_path)
    assert proc.returncode == 0 and _args(out)[-2:] == ["--findings", "task.md"] and "--review" not in _args(out)
    proc, out = run_step(action_step("run")["run"], task | {"INPUT_REVIEW": "false"}, tmp_path / "ws", tmp_path)
    assert "--findings" not in _args(out)
    assert load(ROOT / "action.yml")["inputs"]["review"]["default"] == "false"


def test_the_review_workflow_has_the_minimal_permissions_and_uploads_the_sarif():
    workflow = load(WORKFLOW)
    assert workflow["permissions"] == {"contents": "read", "pull-requests": "write", "security-events": "write"}
    assert workflow["on"] == {"pull_request": {"types": ["opened", "synchronize", "ready_for_review"]}}
    steps = workflow["jobs"]["review"]["steps"]
    agent = next(s for s in steps if s.get("uses") == PLACEHOLDER)
    assert "task" not in agent["with"] and agent["with"]["review"] == "true"
    upload = next(s for s in steps if s.get("uses", "").startswith("github/codeql-action/upload-sarif@"))
    assert upload["if"].startswith("always()") and upload["with"]["sarif_file"] == "${{ steps.sarif.outputs.file }}"
    find = next(s for s in steps if s.get("id") == "sarif")
    assert find["if"] == "always()" and find["env"]["RUN_DIR"] == "${{ steps.agent.outputs.run-dir }}"
    assert steps.index(agent) < steps.index(find) < steps.index(upload)
