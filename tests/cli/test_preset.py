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


def test_preset_small_reads_the_files_the_task_names_before_the_first_request(fake, workspace, agent_run):
    # The 1.5B model never read a file before editing it (bench/bench_solve.py): the runner reads the ones the task
    # (then its check) names, through the call pipeline — within the caps, and only what the policy lets it read.
    (workspace / "calc.py").write_text("def add(a, b):\n    return a - b\n", encoding="utf-8")
    (workspace / "test_calc.py").write_text("print('ok')\n", encoding="utf-8")
    (workspace / "notes.txt").write_text("SECRET-NOTE\n", encoding="utf-8")
    (workspace / "big.py").write_text("# big\n" * 2000, encoding="utf-8")  # 12 KB: over the 8 KiB cap
    (workspace / "p.jsonc").write_text(json.dumps({"extends": "default", "permission": {"rules": [
        {"domain": "read", "pattern": "workspace:notes.txt", "decision": "deny"},
        {"domain": "bash", "pattern": "shell:python3 test_calc.py", "decision": "allow"}]}}), encoding="utf-8")
    (workspace / "t.md").write_text("---\ncheck: python3 test_calc.py\n---\nFix calc.py (see notes.txt, big.py and "
                                    "gone.py).\n", encoding="utf-8")
    fake.add(reply("add subtracts."))
    r = agent_run("--preset", "small", "--policy", "p.jsonc", "t.md")
    assert r.code == 0, r.stderr  # the runner's own reads deny nothing: the verdict is the model's
    calls = r.of_type("tool_call")
    assert [(c["turn"], c["tool"], json.loads(c["arguments"]), c["source"]) for c in calls] == \
        [(1, "read", {"path": "calc.py"}, "preset"), (1, "read", {"path": "test_calc.py"}, "preset")]
    assert all(e["ok"] for e in r.of_type("tool_result")) and not r.summary.get("denials")
    first = fake.requests[0]
    sent = first["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "assistant", "tool"]
    assert sent[2]["tool_calls"][0]["function"] == {"name": "read", "arguments": '{"path":"calc.py"}'}
    assert sent[3]["tool_call_id"] == sent[2]["tool_calls"][0]["id"] and "return a - b" in sent[3]["content"]
    text = json.dumps(first, ensure_ascii=False, separators=(",", ":"))
    assert "SECRET-NOTE" not in text and "# big" not in text
    # Within the budget of a task that names no file, beside what was read for the model.
    shown = sum(len(json.dumps(m, ensure_ascii=False, separators=(",", ":"))) for m in sent[2:])
    assert (len(text) - shown) / 4 <= FIRST_REQUEST_BUDGET


def test_a_file_read_for_the_model_is_not_one_write_may_replace(fake, workspace, agent_run):
    # The runner's read is not the agent's: `write` over it is WouldOverwrite (a small model writes fragments), edit
    # changes it; a new file is written.
    (workspace / "calc.py").write_text("def add(a, b):\n    return a - b\n", encoding="utf-8")
    (workspace / "t.md").write_text("Fix calc.py.\n", encoding="utf-8")
    fake.add(reply(calls=[("write", {"path": "calc.py", "content": "return a + b\n"}),
                          ("write", {"path": "notes.txt", "content": "add adds\n"})]), reply("add subtracts."))
    r = agent_run("--preset", "small", "--tools", "read,edit,write", "t.md")
    assert r.code == 0, r.stderr
    over, new = r.of_type("tool_result")[1:]
    assert over["error_type"] == "WouldOverwrite" and new["ok"]
    assert (workspace / "calc.py").read_text(encoding="utf-8") == "def add(a, b):\n    return a - b\n"


def test_preset_small_sends_back_up_to_four_non_answers(fake, workspace, agent_run):
    # The default 2 were spent before the 1.5B model's second file's block came (bench/bench_solve.py version_bump).
    fake.add(reply("I fixed it."), reply("Let me check."), reply("You need to run it."), reply("Nothing to do here."))
    r = agent_run("--preset", "small", "task.md")
    assert r.code == 0, r.stderr
    assert [e["reason"] for e in r.of_type("answer_refused")] == ["claimed_change", "announced", "handed_over"]


def test_the_agents_first_read_of_a_file_read_for_it_says_it_is_unchanged(fake, workspace, agent_run):
    # The 1.5B model re-read the last file read for it, run after run, and given the same text again replied with
    # nothing; with a note that it is unchanged after the text, it went on with the fix (probes of the real model).
    (workspace / "calc.py").write_text("def add(a, b):\n    return a - b\n", encoding="utf-8")
    (workspace / "t.md").write_text("Fix calc.py.\n", encoding="utf-8")
    fake.add(reply(calls=[("read", {"path": "calc.py"})]), reply(calls=[("read", {"path": "calc.py"})]),
             reply("add subtracts."))
    r = agent_run("--preset", "small", "t.md")
    assert r.code == 0, r.stderr
    preset, first, again = r.of_type("tool_result")
    assert first["content"] == preset["content"] + ("\n[calc.py has not changed since it was read for you above. Go "
                                                    "on from there: change it with edit, or run a command with bash.]")
    assert again["content"] == preset["content"]  # once: a later read is a read


def test_a_pretooluse_hook_leaves_the_runners_reads_out(fake, workspace, agent_run, tmp_path):
    # A hook could refuse the runner's read as a recorded denial: the verdict `denied` for nothing the model did.
    (workspace / "calc.py").write_text("def add(a, b):\n    return a - b\n", encoding="utf-8")
    (workspace / "t.md").write_text("Fix calc.py.\n", encoding="utf-8")
    policy = tmp_path / "p.jsonc"
    policy.write_text(json.dumps({"extends": "default", "hooks": {"PreToolUse": [
        {"matcher": "*", "hooks": [{"type": "command", "command": "echo no >&2; exit 2"}]}]}}), encoding="utf-8")
    fake.add(reply("add subtracts."))
    r = agent_run("--preset", "small", "--policy", str(policy), "t.md")
    assert r.code == 0 and r.of_type("tool_call") == [], r.stderr
