"""`agent-run batch`: parallel tasks in worktrees of their own, the non-git refusal, batch.json,
and the options passed through to every task's `run`."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path
from typing import Any

from tests.conftest import agent_run_argv, clean_env
from tests.fakes.openai_server import hang, reply
from tests.fakes.wait import HANG_S, until

GIT_ID = ("-c", "user.email=ci@example.com", "-c", "user.name=CI")


def _git(workspace: Path, *args: str) -> str:
    return subprocess.run(["git", *GIT_ID, *args], cwd=workspace, check=True, capture_output=True,
                          text=True).stdout


def _make_repo(workspace: Path) -> None:
    (workspace / "shared.txt").write_text("base\n")
    _git(workspace, "init", "-q")
    _git(workspace, "add", ".")
    _git(workspace, "commit", "-q", "-m", "base")


def _tasks(workspace: Path, n: int) -> list[str]:
    """Task files t0.md.. whose text names their version: the fake routes each conversation by it."""
    names = []
    for i in range(n):
        (workspace / f"t{i}.md").write_text(f"Put version {i} into shared.txt.\n")
        names.append(f"t{i}.md")
    return names


def _writes_its_version(fake, i: int) -> None:
    fake.route(f"version {i}", reply(calls=[("read", {"path": "shared.txt"}),
                                            ("write", {"path": "shared.txt", "content": f"version {i}\n"})]),
               reply(f"wrote version {i}"))


def _check_shape(result: dict[str, Any], n: int) -> None:
    """The issue's Decision: {exit_code, tasks: [{task, run_dir, status, exit_code, duration_s}]}."""
    assert isinstance(result["exit_code"], int) and len(result["tasks"]) == n
    for entry in result["tasks"]:
        assert {"task", "run_dir", "status", "exit_code", "duration_s"} <= set(entry)
        assert isinstance(entry["task"], str) and isinstance(entry["status"], str)
        assert isinstance(entry["exit_code"], int) and isinstance(entry["duration_s"], int | float)


def test_parallel_tasks_editing_one_file_get_independent_patches(fake, workspace, agent_run):
    names = _tasks(workspace, 4)
    _make_repo(workspace)
    for i in range(4):
        _writes_its_version(fake, i)
    r = agent_run("batch", "-j", "4", *names, timeout=600)  # ~8 s on 2 idle cores: the timeout only stops a hang
    assert r.code == 0, r.stdout + r.stderr
    assert len(r.new_dirs) == 4
    assert (workspace / "shared.txt").read_text() == "base\n"  # the workspace itself is untouched
    assert _git(workspace, "status", "--porcelain") == ""  # .agent-run/ ignores itself

    result = json.loads((r.runs_dir / "batch.json").read_text())
    _check_shape(result, 4)
    assert result["exit_code"] == 0 and result["isolation"] == "worktree"
    assert [e["task"] for e in result["tasks"]] == names
    worktrees = workspace / ".agent-run" / "worktrees"
    assert len([p for p in worktrees.iterdir() if p.is_dir()]) == 4
    for i, entry in enumerate(result["tasks"]):
        assert entry["status"] == "success" and entry["exit_code"] == 0
        run_dir = Path(entry["run_dir"])
        assert run_dir in r.new_dirs
        patch = (run_dir / "changes.patch").read_text()
        assert f"+version {i}" in patch and "-base" in patch
        assert not any(f"version {j}" in patch for j in range(4) if j != i), patch
        summary = json.loads((run_dir / "summary.json").read_text())
        assert summary["changed_files"] == ["shared.txt"]
        tree = Path(entry["worktree"])
        assert tree.parent == worktrees and (tree / "shared.txt").read_text() == f"version {i}\n"
        # Each patch is against the workspace's HEAD and applies to it alone.
        subprocess.run(["git", "apply", "--check", str(run_dir / "changes.patch")], cwd=workspace, check=True)
    table = r.stdout.splitlines()
    assert table[0].split()[:3] == ["task", "status", "exit"] and len(table) == 5
    assert str(r.runs_dir / "batch.json") in r.stderr


def test_one_job_runs_in_the_workspace_itself_unless_isolated(fake, workspace, agent_run):
    names = _tasks(workspace, 2)
    _make_repo(workspace)
    _writes_its_version(fake, 0)
    fake.route("version 1", reply(calls=[("read", {"path": "shared.txt"})]), reply("read it"))
    r = agent_run("batch", *names)
    assert r.code == 0, r.stdout + r.stderr
    assert (workspace / "shared.txt").read_text() == "version 0\n"
    # One after another: the second task saw what the first one wrote.
    assert any("version 0" in str(m.get("content")) for m in fake.requests[-1]["messages"] if m["role"] == "tool")
    assert not (workspace / ".agent-run" / "worktrees").exists()
    assert json.loads((r.runs_dir / "batch.json").read_text())["isolation"] == "none"

    _git(workspace, "checkout", "-q", "--", "shared.txt")
    _writes_its_version(fake, 0)
    r = agent_run("batch", "--isolate", "worktree", "t0.md")
    assert r.code == 0, r.stdout + r.stderr
    assert (workspace / "shared.txt").read_text() == "base\n"
    entry = json.loads((r.runs_dir / "batch.json").read_text())["tasks"][0]
    assert Path(entry["worktree"]).parent == workspace / ".agent-run" / "worktrees"


def test_parallel_batch_outside_git_is_refused_before_anything_runs(fake, workspace, agent_run):
    names = _tasks(workspace, 2)
    r = agent_run("batch", "-j", "2", *names)
    assert r.code == 2
    assert "not in a git work tree" in r.stderr and "--shared-workspace" in r.stderr
    assert r.new_dirs == [] and fake.requests == []
    assert not (workspace / ".agent-run" / "runs" / "batch.json").exists()

    r = agent_run("batch", "-j", "2", "--output-format", "json", *names)
    assert r.code == 2 and fake.requests == []
    out = json.loads(r.stdout)
    assert out["status"] == "usage_error" and out["exit_code"] == 2 and out["tasks"] == []

    r = agent_run("batch", "--isolate", "worktree", "t0.md")
    assert r.code == 2 and "--isolate worktree" in r.stderr and fake.requests == []


def test_repository_without_a_commit_is_refused(fake, workspace, agent_run):
    names = _tasks(workspace, 2)
    _git(workspace, "init", "-q")
    r = agent_run("batch", "-j", "2", *names)
    assert r.code == 2 and "no commit yet" in r.stderr and fake.requests == []


def test_shared_workspace_outside_git_runs_and_json_output_is_batch_json(fake, workspace, agent_run):
    names = _tasks(workspace, 2)
    fake.route("version 0", reply("zero"))
    fake.route("version 1", reply("one"))
    r = agent_run("batch", "-j", "2", "--shared-workspace", "--output-format", "json", *names)
    assert r.code == 0, r.stdout + r.stderr
    printed = json.loads(r.stdout)
    assert printed == json.loads((r.runs_dir / "batch.json").read_text())
    _check_shape(printed, 2)
    assert printed["isolation"] == "shared"
    assert [(e["task"], e["status"], e["worktree"]) for e in printed["tasks"]] == [
        ("t0.md", "success", None), ("t1.md", "success", None)]
    assert sorted(Path(e["run_dir"]) for e in printed["tasks"]) == r.new_dirs
    assert not (workspace / ".agent-run" / "worktrees").exists()


def test_approve_and_runs_dir_reach_every_task(fake, workspace, agent_run, tmp_path):
    fake.add(reply(calls=[("bash", {"command": "echo approved"})]), reply("ran it"))
    runs = tmp_path / "elsewhere"
    r = agent_run("batch", "--sandbox", "auto", "--runs-dir", str(runs), "--approve", "bash:shell:echo *", "task.md")
    assert r.code == 0, r.stdout + r.stderr
    result = json.loads((runs / "batch.json").read_text())
    run_dir = Path(result["tasks"][0]["run_dir"])
    assert run_dir.parent == runs
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "success" and summary["denials"] == []
    assert fake.requests[1]["messages"][-1]["content"] == "approved\n"  # the command ran: no question asked


def test_mode_and_max_tokens_reach_every_task(fake, workspace, agent_run, tmp_path):
    big = {"prompt_tokens": 5000, "completion_tokens": 100, "total_tokens": 5100}
    fake.add(reply(calls=[("bash", {"command": "echo hi"})], usage=big), reply("never"))
    out = tmp_path / "reports" / "batch.json"
    r = agent_run("batch", "--sandbox", "auto", "--mode", "full_access", "--max-tokens", "5500",
                  "--batch-json", str(out), "task.md")
    assert r.code == 5, r.stdout + r.stderr  # the budget (--max-tokens) stopped it, not a denial (--mode)
    result = json.loads(out.read_text())
    assert result["exit_code"] == 5 and result["tasks"][0]["status"] == "budget_exhausted"
    assert not (r.runs_dir / "batch.json").exists()
    events = [json.loads(line) for line in (Path(result["tasks"][0]["run_dir"]) / "events.jsonl").open()]
    decision = next(e for e in events if e["type"] == "permission_decision")
    assert (decision["mode"], decision["decision"]) == ("full_access", "auto_approved")
    assert len(fake.requests) == 1


def test_sigint_stops_the_running_task_and_starts_no_more(fake, workspace):
    names = _tasks(workspace, 2)
    fake.route("version 0", hang(600), reply("late"))  # answers only once the test is over
    fake.route("version 1", reply("never started"))
    env = clean_env(OPENAI_BASE_URL=fake.base_url, OPENAI_API_KEY="sk-test")
    proc = subprocess.Popen([*agent_run_argv(), "batch", *names], cwd=workspace, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    runs = workspace / ".agent-run" / "runs"
    until(lambda: fake.requests, "the first task to ask the model")
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=HANG_S)
    assert proc.returncode == 130, out + err
    result = json.loads((runs / "batch.json").read_text())
    assert [(e["status"], e["exit_code"]) for e in result["tasks"]] == [("interrupted", 130), ("not_started", 130)]
    assert result["tasks"][1]["run_dir"] is None and len(fake.requests) == 1
