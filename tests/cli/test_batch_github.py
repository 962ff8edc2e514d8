"""`agent-run batch` in a GitHub Actions step: every task's annotations (titled with the task), one output
`results` (batch.json on one line) instead of the last task's outputs, each task's step summary."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.fakes.openai_server import reply


def github_outputs(path: Path) -> dict[str, str]:
    """$GITHUB_OUTPUT in heredoc form (`name<<DELIM`, value lines, `DELIM`), as the runner reads it."""
    values, lines = {}, iter(path.read_text(encoding="utf-8").splitlines())
    for line in lines:
        name, _, delimiter = line.partition("<<")
        assert delimiter, f"not heredoc form: {line!r}"
        values[name] = "\n".join(iter(lambda: next(lines), delimiter))
    return values


def test_batch_on_github_annotates_every_task_and_outputs_the_batch_result(fake, workspace, agent_run, tmp_path):
    (workspace / "denied.md").write_text("Task A: build it.\n")
    # Front matter may lower a budget: this task stops after one turn (exit 5).
    (workspace / "budget.md").write_text("---\nmax_turns: 1\n---\nTask B: look around.\n")
    fake.route("Task A", reply(calls=[("bash", {"command": "make"})]), reply("could not build"))
    fake.route("Task B", reply(calls=[("list", {})]), reply(calls=[("list", {})]))
    output, step_summary = tmp_path / "github-output", tmp_path / "step-summary.md"
    r = agent_run("batch", "--shared-workspace", "-j", "2", "denied.md", "budget.md",
                  env={"GITHUB_ACTIONS": "true", "GITHUB_OUTPUT": str(output),
                       "GITHUB_STEP_SUMMARY": str(step_summary), "OPENAI_API_KEY": "sk-test-secret-123"})
    assert r.code == 5, r.stdout + r.stderr  # the worst of 3 and 5
    err = r.stderr.splitlines()

    assert err[0] == "::add-mask::sk-test-secret-123"  # first thing, as `run` does
    # Every task's annotations, each naming its task; denial first, with the command that approves it.
    denied = [line for line in err if line.startswith("::error title=agent-run%3A denied bash (denied.md)::")]
    assert len(denied) == 1 and "agent-run replay" in denied[0]
    assert [line for line in err if line.startswith("::error title=agent-run%3A budget exhausted (budget.md)::")]
    # The table is printed while workflow commands are stopped; the annotations come after they resume.
    stop = next(line for line in err if line.startswith("::stop-commands::"))
    resume = f"::{stop.removeprefix('::stop-commands::')}::"
    assert err.index(stop) < err.index(resume) < err.index(denied[0])
    assert r.stdout.splitlines()[0].split()[:3] == ["task", "status", "exit"]

    # One output: the batch's result, not whichever task finished last.
    values = github_outputs(output)
    assert list(values) == ["results"]
    assert "\n" not in values["results"]
    batch_json = json.loads((r.runs_dir / "batch.json").read_text())
    assert json.loads(values["results"]) == batch_json
    assert [(t["task"], t["status"], t["exit_code"]) for t in batch_json["tasks"]] == [
        ("denied.md", "denied", 3), ("budget.md", "budget_exhausted", 5)]
    # Each task still wrote its own step summary; the batch's table of all its tasks comes after them.
    summary = step_summary.read_text()
    assert all(t["run_id"] in summary for t in batch_json["tasks"])
    overview = summary.index("## ❌ agent-run batch: 2 tasks (exit 5)")
    assert all(summary.index(t["run_id"]) < overview for t in batch_json["tasks"])
    assert "| `denied.md` | ⛔ `denied` | 3 |" in summary[overview:]


def test_a_refused_batch_on_github_says_why_and_outputs_it(fake, workspace, agent_run, tmp_path):
    (workspace / "a.md").write_text("a\n")
    output = tmp_path / "github-output"
    r = agent_run("batch", "-j", "2", "a.md", "task.md",  # in parallel outside git: refused before any run
                  env={"GITHUB_ACTIONS": "true", "GITHUB_OUTPUT": str(output)})
    assert r.code == 2 and fake.requests == []
    assert re.search(r"^::error title=agent-run batch%3A usage error::-j 2 runs tasks at once", r.stderr, re.M)
    refusal = json.loads(github_outputs(output)["results"])
    assert refusal["status"] == "usage_error" and refusal["exit_code"] == 2 and refusal["tasks"] == []

