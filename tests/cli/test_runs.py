"""`agent-run runs list|show` on real run directories, and `memory_search` end to end."""

from __future__ import annotations

import json

from click.testing import CliRunner

from runner.cli.group import cli
from tests.fakes.openai_server import reply


def _section(stdout: str, title: str) -> list[list[str]]:
    """The rows (split on whitespace) of the table under the line starting with `title`, header skipped."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(title))
    rows = []
    for line in lines[start + 2:]:
        if not line.strip():
            break
        rows.append(line.split())
    return rows


def test_runs_list_and_show(fake, workspace, agent_run):
    (workspace / "notes.txt").write_text("alpha\n")
    fake.add(reply("first answer"))
    first = agent_run("task.md")
    assert first.code == 0, first.stderr
    # The fake server counts turns across runs: this run's requests are its turns 2 and 3.
    fake.add(reply(calls=[("read", {"path": "notes.txt"}), ("bash", {"command": "echo hi"})]), reply("could not"))
    second = agent_run("task.md")
    assert second.code == 3, second.stderr

    listed = agent_run("runs", "list")
    assert listed.code == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert lines[0].split()[:6] == ["run", "status", "exit", "turns", "tools", "tokens"]
    rows = [line.split() for line in lines[1:]]
    assert [r[0] for r in rows] == [second.summary["run_id"], first.summary["run_id"]]  # newest first
    assert rows[0][1:6] == ["denied", "3", "2", "2", f"{second.summary['usage']['total_tokens']:,}"]
    assert rows[1][1:6] == ["success", "0", "1", "0", "110"]
    one = CliRunner().invoke(cli, ["runs", "list", "--runs-dir", str(listed.runs_dir), "--limit", "1"])
    assert one.stdout.splitlines()[1].split()[0] == second.summary["run_id"]
    assert len(one.stdout.splitlines()) == 2 and "1 older run(s) not shown" in one.stderr

    shown = agent_run("runs", "show", str(second.run_dir))
    assert shown.code == 0, shown.stderr
    out = shown.stdout
    assert out.splitlines()[0] == f"run {second.summary['run_id']}: denied (exit 3)"
    assert "usage:    500 prompt (150 cached) · 20 completion · 520 total" in out
    # turn, messages, est. tokens, prompt, cached, completion, stage, extends-previous
    requests = _section(out, "requests (2)")
    assert [r[:2] + r[3:6] for r in requests] == [["1", "2", "200", "50", "10"], ["2", "5", "300", "100", "10"]]
    assert all(len(r) == 8 for r in requests)
    denial = second.summary["denials"][0]
    assert denial["replay"] == f"agent-run replay .agent-run/runs/{second.run_dir.name} --call call_2_1 --approve"
    assert f"    replay: {denial['replay']}" in out.splitlines()
    calls = _section(out, "tool calls (2)")
    assert calls[0] == ["1", "read", "path=notes.txt", "allow", "ok", "7"]  # "1\talpha"
    assert calls[1] == ["1", "bash", "command=echo", "hi", "deny", "(ask)", "ApprovalRequired",
                        str(second.of_type("tool_result")[1]["bytes"])]

    as_json = agent_run("runs", "show", "--json", second.summary["run_id"])  # a bare run id, from the workspace
    data = json.loads(as_json.stdout)
    assert [(r["prompt_tokens"], r["cached_tokens"]) for r in data["requests"]] == [(200, 50), (300, 100)]
    assert data["denials"][0]["replay"] == denial["replay"]

    missing = CliRunner().invoke(cli, ["runs", "show", str(workspace / "no-such-run")])
    assert missing.exit_code == 2 and "not a run directory" in missing.stderr


def test_runs_list_marks_replays_and_resumes(fake, workspace, agent_run):
    fake.add(reply(calls=[("bash", {"command": "echo hi"})]), reply("could not"))
    denied = agent_run("task.md")
    assert denied.code == 3, denied.stderr
    run_id = denied.summary["run_id"]
    assert agent_run("replay", str(denied.run_dir), "--approve").code == 0
    fake.add(reply("went on"))
    assert agent_run("replay", str(denied.run_dir), "--approve", "--continue").code == 0
    assert agent_run("--model", f"replay:{denied.run_dir}", "task.md").code == 3

    lines = agent_run("runs", "list").stdout.splitlines()[1:]
    marks = [line[line.index("[") :].split("]")[0] + "]" if "[" in line else "" for line in lines]
    assert marks == [f"[model replay of {denied.run_dir.name}]", f"[resume of {run_id}]",
                     f"[replay of {run_id}]", ""]
    assert lines[3].startswith(run_id)


def test_show_prints_stage_extends_previous_and_compaction(tmp_path):
    # Hand-written (not named like a run id): the fields being added to the events, and no summary.json.
    run_dir = tmp_path / "handmade"
    run_dir.mkdir()
    base = {"run_id": "r", "ts": "2026-01-01T00:00:00.000Z"}
    events = [
        {"type": "model_request", "turn": 1, "message_count": 2, "estimated_tokens": 900, "stage": "none",
         "extends_previous": False},
        {"type": "model_response", "turn": 1, "message": {"role": "assistant", "content": "x"},
         "usage": {"prompt_tokens": 1000, "completion_tokens": 5, "cached_tokens": 0}},
        {"type": "compaction", "turn": 2, "stage": "hard_clear", "before_tokens": 5000, "after_tokens": 1200},
        {"type": "model_request", "turn": 2, "message_count": 4, "estimated_tokens": 1300, "stage": "hard_clear",
         "extends_previous": True},
        {"type": "model_response", "turn": 2, "message": {"role": "assistant", "content": "y"},
         "usage": {"prompt_tokens": 1400, "completion_tokens": 7, "cached_tokens": 1024}},
        {"type": "run_finished", "status": "success", "exit_code": 0, "reason": None, "turns": 2, "tool_calls": 0},
    ]
    (run_dir / "events.jsonl").write_text(
        "".join(json.dumps({"seq": i, **base, **e}) + "\n" for i, e in enumerate(events, start=1)))
    result = CliRunner().invoke(cli, ["runs", "show", str(run_dir)])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0] == "run handmade: success (exit 0)"
    assert _section(result.output, "requests (2)") == [
        ["1", "2", "900", "1,000", "0", "5", "none", "no"],
        ["2", "4", "1,300", "1,400", "1,024", "7", "hard_clear", "yes"],
    ]
    assert "  seq 3: turn=2 stage=hard_clear before_tokens=5,000 after_tokens=1,200" in result.output.splitlines()


def test_memory_search_finds_an_earlier_tool_result(fake, workspace, agent_run):
    (workspace / "notes.txt").write_text("the launch code is ZEBRA-7\n")
    fake.add(reply(calls=[("read", {"path": "notes.txt"})]),
             reply(calls=[("memory_search", {"query": "LAUNCH code"})]),
             reply("It is ZEBRA-7."))
    r = agent_run("task.md")
    assert r.code == 0, r.stderr
    found = fake.requests[2]["messages"][-1]
    assert found["role"] == "tool" and found["tool_call_id"] == "call_2_0"
    first_result = r.of_type("tool_result")[0]
    assert found["content"].startswith(f"[seq {first_result['seq']} · tool_result · read call_1_0] ")
    assert "the launch code is ZEBRA-7" in found["content"]
    decision = r.of_type("permission_decision")[1]
    assert decision["decision"] == "allow"
    assert decision["targets"][0]["target"] == f"workspace:.agent-run/runs/{r.run_dir.name}/events.jsonl"


def test_show_header_has_the_findings(tmp_path):
    run_dir = tmp_path / "byhand"
    run_dir.mkdir()
    (run_dir / "events.jsonl").write_text("")
    (run_dir / "summary.json").write_text(json.dumps({
        "run_id": "byhand", "status": "budget_exceeded", "exit_code": 5, "reason": "max_turns reached",
        "turns": 10, "tool_calls": 12, "denials": [], "duration_s": 125.4, "model": "m", "policy": "p.jsonc",
        "usage": {"prompt_tokens": 9000, "completion_tokens": 100, "cached_tokens": 4000, "total_tokens": 9100,
                  "cost_usd": 0.25},
        "budget": {"name": "max_turns", "limit": 10, "used": 10},
        "check": {"command": "pytest -q", "ok": False, "error_type": "ExitNonZero", "exit_code": 1},
        "changed_files": ["a.py", "b.py"], "loop_warnings": []}))
    lines = CliRunner().invoke(cli, ["runs", "show", str(run_dir)]).output.splitlines()
    assert lines[0] == "run byhand: budget_exceeded (exit 5)"
    assert "  usage:    9,000 prompt (4,000 cached) · 100 completion · 9,100 total · cost $0.2500" in lines
    assert "  duration: 2m05s · 10 turns · 12 tool calls" in lines
    assert "  budget:   name=max_turns limit=10 used=10" in lines
    assert "  check:    command=pytest -q ok=no error_type=ExitNonZero exit_code=1" in lines
    assert "  changed:  a.py, b.py" in lines
    assert "denials: none" in lines



def test_show_says_where_the_price_came_from(tmp_path):
    run_dir = tmp_path / "priced"
    run_dir.mkdir()
    (run_dir / "events.jsonl").write_text("")
    usage = {"prompt_tokens": 9000, "completion_tokens": 100, "cached_tokens": 0, "total_tokens": 9100,
             "cost_usd": 0.25, "price_source": "genai-prices 0.2.3"}
    (run_dir / "summary.json").write_text(json.dumps({"run_id": "priced", "status": "success", "exit_code": 0,
                                                      "denials": [], "usage": usage}))
    lines = CliRunner().invoke(cli, ["runs", "show", str(run_dir)]).output.splitlines()
    assert "  usage:    9,000 prompt (0 cached) · 100 completion · 9,100 total · cost $0.2500 (prices: genai-prices " \
           "0.2.3)" in lines

def test_runs_list_says_the_runs_in_the_workspace_are_not_its_changes(fake, workspace, agent_run):
    import shutil
    import subprocess

    subprocess.run(["git", "init", "-q"], cwd=workspace, check=True)
    fake.add(reply(calls=[("list", {}), ("write", {"path": "made.txt", "content": "x\n"})]), reply("done"))
    r = agent_run("task.md")
    assert r.code == 0 and r.summary["status"] == "success", r.stderr
    assert [e["type"] for e in r.events][-1] == "run_finished"
    # The agent's `list` marks it as git does (`git status --ignored`: `!! .agent-run/`).
    listing = fake.requests[1]["messages"][-2]
    assert listing["role"] == "tool" and ".agent-run/ (ignored)" in listing["content"].splitlines(), listing
    listed = agent_run("runs", "list")
    assert listed.code == 0 and r.run_dir.name in listed.stdout
    assert ".agent-run/ is ignored by git" in listed.stderr and "never part of a run's changes" in listed.stderr
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=workspace,
                            capture_output=True, text=True, check=True).stdout
    assert ".agent-run" not in status and "made.txt" in status  # what the note says
    assert ".agent-run" not in (r.run_dir / "changes.patch").read_text()
    # A runs directory elsewhere in the workspace (`--runs-dir runs`) is left out of the changes too
    # (runner/run/assemble.py excludes it), but git shows it: said so.
    shutil.copytree(r.run_dir, workspace / "runs" / r.run_dir.name)
    listed = agent_run("runs", "list", "--runs-dir", "runs")
    assert listed.code == 0 and r.run_dir.name in listed.stdout
    assert "runs/ is inside the workspace" in listed.stderr and "add runs/ to .gitignore" in listed.stderr
    outside = agent_run("runs", "list", "--runs-dir", str(workspace.parent / "elsewhere"))
    assert outside.code == 0 and "inside the workspace" not in outside.stderr and "ignored" not in outside.stderr


def test_runs_list_does_not_wait_on_a_fifo_named_gitignore(tmp_path):
    """The workspace is untrusted: a FIFO at .agent-run/.gitignore must not hang `runs list`'s note."""
    import os
    import threading

    from runner.cli.runs import ignored_note
    from tests.fakes.wait import HANG_S

    root = tmp_path / ".agent-run" / "runs"
    root.mkdir(parents=True)
    os.mkfifo(tmp_path / ".agent-run" / ".gitignore")  # no writer: a blocking open waits for good
    notes: list[str | None] = []
    reader = threading.Thread(target=lambda: notes.append(ignored_note(tmp_path, root)), daemon=True)
    reader.start()
    reader.join(HANG_S)
    assert notes and "inside the workspace" in str(notes[0]), "ignored_note waited on the FIFO"
