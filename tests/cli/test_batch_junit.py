"""`--junit`, `batch`, GitHub Actions reporting and the action's way of starting a run."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

import xmlschema

from tests.conftest import agent_run_argv, clean_env
from tests.fakes.openai_server import hang, reply
from tests.fakes.wait import HANG_S, until

XSD = Path(__file__).resolve().parents[1] / "fixtures" / "junit-10.xsd"


def test_run_writes_valid_junit(fake, workspace, agent_run):
    fake.add(reply(calls=[("bash", {"command": "echo 'a & <b>'"})]), reply("denied"))
    r = agent_run("--junit", "report.xml", "task.md")
    assert r.code == 3
    xml = (workspace / "report.xml").read_text()
    xmlschema.XMLSchema(str(XSD)).validate(str(workspace / "report.xml"))
    assert '<failure message=' in xml and "agent-run replay" in xml and "&amp; &lt;b&gt;" in xml


def test_batch_runs_each_task_and_exits_with_the_worst_code(fake, workspace, agent_run):
    (workspace / "ok.md").write_text("---\ntitle: Fine\n---\nsay hi\n")
    (workspace / "bad.md").write_text("---\ntitle: Needs bash\n---\nrun something\n")
    fake.add(reply("hi"), reply(calls=[("bash", {"command": "make"})]), reply("could not"))
    r = agent_run("batch", "ok.md", "bad.md", "--junit", "all.xml")
    assert r.code == 3, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].split()[:3] == ["task", "status", "exit"]
    assert lines[1].split()[:3] == ["ok.md", "success", "0"] and lines[2].split()[:3] == ["bad.md", "denied", "3"]
    xmlschema.XMLSchema(str(XSD)).validate(str(workspace / "all.xml"))
    xml = (workspace / "all.xml").read_text()
    assert 'name="Fine"' in xml and 'name="Needs bash"' in xml and 'tests="2"' in xml
    assert len(r.new_dirs) == 2


def test_batch_in_parallel(fake, workspace, agent_run):
    # Not a git workspace: parallel tasks share it only when told to (tests/cli/test_batch.py has worktrees).
    for i in range(3):
        (workspace / f"t{i}.md").write_text(f"task {i}\n")
    fake.add(reply("a"), reply("b"), reply("c"))
    r = agent_run("batch", "-j", "3", "--shared-workspace", "t0.md", "t1.md", "t2.md")
    assert r.code == 0 and len(r.new_dirs) == 3


def test_github_actions_reporting(fake, workspace, agent_run, tmp_path):
    summary_file, output_file = tmp_path / "summary.md", tmp_path / "output.txt"
    fake.add(reply(calls=[("bash", {"command": "echo '::set-output name=x::pwned'\nexit 0"})]),
             reply("done ::error::fake\nsecond line"))
    r = agent_run("task.md", env={"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary_file),
                                  "GITHUB_OUTPUT": str(output_file), "OPENAI_API_KEY": "sk-test-secret-123"})
    assert r.code == 3
    assert "::add-mask::sk-test-secret-123" in r.stderr
    stop = next(line for line in r.stderr.splitlines() if line.startswith("::stop-commands::"))
    token = stop.split("::")[2]
    assert f"::{token}::" in r.stderr  # commands resumed after the run
    assert r.stderr.index(stop) < r.stderr.index(f"::{token}::")
    # Progress is folded in a group that opens before commands stop and closes after they resume.
    assert r.stderr.index("::group::agent-run") < r.stderr.index(stop)
    assert r.stderr.index(f"::{token}::") < r.stderr.index("::endgroup::") < r.stderr.index("::error")
    assert any(line.startswith("::error") and "agent-run replay" in line for line in r.stderr.splitlines())
    md = summary_file.read_text()
    assert "denied" in md and "agent-run replay" in md
    out = output_file.read_text()
    assert "status<<" in out and "\ndenied\n" in out and "exit-code<<" in out and "summary-json<<" in out


def test_sigint_to_a_run_started_like_the_action(fake, workspace):
    # action.yml runs `exec agent-run …` in bash: the signal reaches agent-run itself.
    fake.add(hang(600), reply("late"))  # answers only once the test is over
    env = clean_env(OPENAI_BASE_URL=fake.base_url, OPENAI_API_KEY="sk-test", GITHUB_ACTIONS="true")
    script = f'exec {" ".join(agent_run_argv())} --policy strict task.md'
    proc = subprocess.Popen(["bash", "-c", script], cwd=workspace, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    runs = workspace / ".agent-run" / "runs"

    def asked() -> list:
        logs = list(runs.glob("*/events.jsonl")) if runs.exists() else []
        return logs if logs and '"type":"model_request"' in logs[0].read_text() else []

    logs = until(asked, "the run's model request")
    proc.send_signal(signal.SIGINT)
    code = proc.wait(timeout=HANG_S)
    assert code == 130, proc.stderr.read() if proc.stderr else code
    run_dir = logs[0].parent
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "interrupted" and summary["exit_code"] == 130
