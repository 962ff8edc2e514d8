"""Task files (front matter, check), changes.patch and the stream-json event stream, through the CLI."""

from __future__ import annotations

import json
import subprocess

from tests.fakes.openai_server import reply
from tests.fakes.summary_schema import validate_result_line


def _task(workspace, text):
    (workspace / "t.md").write_text(text)
    return "t.md"


def test_front_matter_overrides_and_title(fake, workspace, agent_run, tmp_path):
    # A task file outside the workspace is the workflow's own: its front matter is a settings layer.
    t = str(tmp_path / "t.md")
    (tmp_path / "t.md").write_text("---\ntitle: Tidy up\nmodel: from-task\nmax_turns: 1\n---\nDo it.\n")
    fake.add(reply(calls=[("list", {})]), reply("never"))
    r = agent_run(t, env={"AGENT_RUN_MODEL": "from-env"})
    assert r.code == 5  # max_turns 1 from the task
    assert fake.requests[0]["model"] == "from-task"
    assert fake.requests[0]["messages"][1]["content"] == "Do it.\n"  # front matter is not sent
    assert r.summary["title"] == "Tidy up"
    fake.add(reply("ok"))
    assert agent_run("--model", "from-flag", t).code == 0
    assert fake.requests[-1]["model"] == "from-flag"


def test_invalid_front_matter_is_exit_2_with_line(fake, workspace, agent_run):
    t = _task(workspace, "---\ntitle: x\nmax_turns: lots\n---\nbody\n")
    r = agent_run(t)
    assert r.code == 2 and "t.md:3: front matter 'max_turns'" in r.summary["reason"]
    t = _task(workspace, "---\ntitle: [oops\n---\nbody\n")
    r = agent_run(t)
    assert r.code == 2 and r.summary["reason"].startswith("t.md:") and "invalid front matter" in r.summary["reason"]
    assert fake.requests == []


def test_unknown_front_matter_key_says_what_was_meant(fake, workspace, agent_run):
    r = agent_run(_task(workspace, "---\ntitle: x\nmax_turn: 3\n---\nbody\n"))
    assert r.code == 2
    assert r.summary["reason"] == "t.md:3: front matter: unknown key 'max_turn' (did you mean 'max_turns'?)"
    assert "unknown key 'max_turn' (did you mean 'max_turns'?)" in r.stderr
    assert "Extra inputs" not in r.stderr
    r = agent_run(_task(workspace, "---\nowner: me\n---\nbody\n"))
    assert r.code == 2 and r.summary["reason"] == (
        "t.md:2: front matter: unknown key 'owner' (known keys: title, check, model, max_turns, timeout, policy, "
        "temperature, top_p, max_output_tokens, seed, reasoning_effort, check_attempts)")
    assert fake.requests == []


def test_check_passes_and_fails(fake, workspace, agent_run):
    t = _task(workspace, "---\ncheck: test -f done.txt\n---\nCreate done.txt\n")
    fake.add(reply(calls=[("write", {"path": "done.txt", "content": "x"})]), reply("created"))
    r = agent_run("--approve", "bash:shell:test *", t)
    assert r.code == 0, r.stderr
    check = r.summary["check"]
    assert check.pop("duration_s") >= 0
    assert check == {"command": "test -f done.txt", "ok": True, "error_type": None, "exit_code": 0}
    (workspace / "done.txt").unlink()
    fake.add(*[reply("I did nothing")] * 3)  # the check's output goes back twice: 3 attempts (--check-attempts)
    r = agent_run("--approve", "bash:shell:test *", t)
    assert r.code == 1 and r.summary["status"] == "failed"
    assert r.summary["reason"] == "the check `test -f done.txt` failed (ExitNonZero, exit code 1) after 3 attempts"
    assert r.summary["check"]["exit_code"] == 1 and len(r.summary["check"]["attempts"]) == 3


def test_check_is_decided_by_the_policy(fake, workspace, agent_run):
    t = _task(workspace, "---\ncheck: curl https://example.com\n---\nx\n")
    fake.add(reply("done"))
    r = agent_run(t)
    assert r.code == 3 and "not allowed by the policy" in r.summary["reason"]
    assert r.summary["denials"][0]["call_id"] == "check"


def test_changes_patch_in_a_git_repo_ignores_preexisting_changes(fake, workspace, agent_run):
    def git(*args):
        subprocess.run(["git", *args], cwd=workspace, check=True, capture_output=True)

    (workspace / "a.txt").write_text("one\n")
    (workspace / "b.txt").write_text("keep\n")
    git("init", "-q")
    git("-c", "user.email=t@t", "-c", "user.name=t", "add", "a.txt", "b.txt")
    git("-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "init")
    (workspace / "b.txt").write_text("user's own edit\n")  # dirty before the run
    fake.add(reply(calls=[("edit", {"path": "a.txt", "old_string": "one", "new_string": "two"}),
                          ("write", {"path": "new.txt", "content": "hello\n"})]), reply("done"))
    r = agent_run("task.md")
    assert r.code == 0, r.stderr
    patch = (r.run_dir / "changes.patch").read_text()
    assert "-one\n+two" in patch and "+hello" in patch
    assert "b.txt" not in patch
    assert sorted(r.summary["changed_files"]) == ["a.txt", "new.txt"]


def test_changes_patch_without_git_covers_edited_files(fake, workspace, agent_run):
    (workspace / "a.txt").write_text("one\n")
    fake.add(reply(calls=[("edit", {"path": "a.txt", "old_string": "one", "new_string": "two"}),
                          ("bash", {"command": "echo made > out.txt"})]), reply("done"))
    r = agent_run("--approve", "bash:shell:echo *", "task.md")
    assert r.code == 0, r.stderr
    patch = (r.run_dir / "changes.patch").read_text()
    assert "--- a/a.txt" in patch and "-one\n+two" in patch
    assert "+made" in patch  # a shell redirection is an edit target, so it is tracked too
    assert sorted(r.summary["changed_files"]) == ["a.txt", "out.txt"]


def test_no_changes_no_patch(fake, workspace, agent_run):
    fake.add(reply("nothing to do"))
    r = agent_run("task.md")
    assert r.code == 0 and not (r.run_dir / "changes.patch").exists() and r.summary["changed_files"] == []


def test_stream_json_prints_every_event_as_it_happens(fake, workspace, agent_run):
    fake.add(reply(calls=[("list", {})]), reply("done"))
    r = agent_run("--output-format", "stream-json", "task.md")
    assert r.code == 0
    streamed = [json.loads(line) for line in r.stdout.splitlines()]
    assert streamed[:-1] == r.events
    assert streamed[-2]["type"] == "run_finished"


def test_stream_json_ends_with_the_result_line(fake, workspace, agent_run):
    workspace.joinpath("a.txt").write_text("x")
    fake.add(reply(calls=[("bash", {"command": "rm a.txt"})]), reply("could not delete"))
    r = agent_run("--output-format", "stream-json", "--sandbox", "off", "task.md")
    assert r.code == 3, r.stderr
    result = json.loads(r.stdout.splitlines()[-1])
    validate_result_line(result)
    assert result["type"] == "result" and result["status"] == "denied" and result["exit_code"] == 3
    assert result["answer"] == "could not delete" and result["run_id"] == r.run_dir.name
    assert result["denials"][0]["target"] == "shell:rm a.txt" and result["usage"]["prompt_tokens"] > 0
    assert {k: v for k, v in result.items() if k != "type"} == r.summary  # the summary's keys, as Claude's result
    assert "result" not in {e["type"] for e in r.events}  # only on stdout


def test_stream_json_result_line_on_a_usage_error(agent_run):
    r = agent_run("--output-format", "stream-json", "missing.md")
    assert r.code == 2
    result = json.loads(r.stdout.splitlines()[-1])
    validate_result_line(result)
    assert result["type"] == "result" and result["status"] == "usage_error" and "missing.md" in result["reason"]

