"""Sessions through the real CLI: resume any stopped run, fork it, lock it, move it.

Every resume is checked the same way: a new run directory linked both ways (`resumed_from`;
the old run's `continuations.jsonl`), the first resumed request's messages extending the old run's
last request byte for byte (the prompt cache), and one user message saying why it stopped.
"""

from __future__ import annotations

import json
import shlex
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from tests.cli.test_replay_and_signals import _start, _wait_for_event
from tests.conftest import agent_run_argv, clean_env
from tests.fakes.openai_server import error, hang, reply
from tests.fakes.wait import HANG_S, until
from tests.fakes.zygote import Zygote
from tests.fakes.zygote import run as run_agent_run


def messages_text(raw: bytes) -> str:
    """The `messages` array of a request body, as the bytes sent."""
    text = raw.decode("utf-8")
    start = text.index('"messages":') + len('"messages":')
    _, end = json.JSONDecoder().raw_decode(text, start)
    return text[start:end]


def files_of(run_dir: Path) -> dict[str, bytes]:
    return {str(p.relative_to(run_dir)): p.read_bytes() for p in sorted(run_dir.rglob("*"))
            if p.is_file() and p.name not in ("continuations.jsonl", ".lock")}


def cli(argv: list[str], cwd: Path, fake, zygote: Zygote | None, **env: str) -> subprocess.CompletedProcess[str]:
    """A printed command (`agent-run …`), run as printed from `cwd` (forked from the zygote when it can be)."""
    if argv[0] == "agent-run":
        argv = [*agent_run_argv(), *argv[1:]]
    return run_agent_run(zygote, argv, cwd=cwd, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60,
                         env=clean_env(OPENAI_BASE_URL=fake.base_url, OPENAI_API_KEY="sk-test", **env))


def check_resumed(fake, before: int, old: Path, resumed, *, note: str) -> list[dict]:
    """The resumed run is linked both ways, extends the old prompt byte for byte, and says why."""
    assert resumed.code == 0, resumed.stderr
    summary = resumed.summary
    assert summary["resumed_from"]["run_id"] == old.name and summary["resumed_from"]["kind"] == "resume"
    lines = [json.loads(x) for x in (old / "continuations.jsonl").read_text().splitlines()]
    assert [c["run_id"] for c in lines] == [summary["run_id"]]
    old_prompt, new_prompt = messages_text(fake.raw_requests[before - 1]), messages_text(fake.raw_requests[before])
    assert new_prompt.startswith(old_prompt[:-1]) and len(new_prompt) > len(old_prompt)
    sent = fake.requests[before]["messages"]
    assert sent[-1]["role"] == "user" and note in sent[-1]["content"]
    started = next(e for e in resumed.events if e["type"] == "run_started")
    assert started["resumed_from"]["run_id"] == old.name
    first = next(e for e in resumed.events if e["type"] == "model_request")
    assert first["extends_previous"] is True and first["snapshot"] is not None
    return sent


def test_a_budget_stop_resumes_with_fresh_budgets_and_a_message(fake, workspace, agent_run):
    (workspace / "a.txt").write_text("alpha\n")
    fake.add(reply(calls=[("read", {"path": "a.txt"})]), reply(calls=[("read", {"path": "a.txt"})]))
    first = agent_run("--max-turns", "2", "task.md")
    assert first.code == 5
    assert f"agent-run: next: agent-run resume .agent-run/runs/{first.run_dir.name}" in first.stderr
    before = len(fake.requests)
    fake.add(reply("alpha it is"))
    resumed = agent_run("resume", f".agent-run/runs/{first.run_dir.name}", "the file is short; answer now",
                        "--max-turns", "3")
    sent = check_resumed(fake, before, first.run_dir, resumed, note="max turns reached (2)")
    assert sent[-1]["content"].endswith("\n\nthe file is short; answer now")
    assert resumed.summary["answer"] == "alpha it is"
    # turns go on from where they were
    assert [e["turn"] for e in resumed.of_type("model_request")] == [3]


def test_a_doom_loop_resume_names_the_loop(fake, workspace, agent_run):
    (workspace / "a.txt").write_text("same\n")
    fake.add(*[reply(calls=[("read", {"path": "a.txt"})]) for _ in range(8)])
    first = agent_run("task.md")
    assert first.code == 4, first.stderr
    before = len(fake.requests)
    fake.add(reply("stopped looping"))
    resumed = agent_run("resume", str(first.run_dir))
    sent = check_resumed(fake, before, first.run_dir, resumed, note="stopped by a loop guard")
    assert "do not repeat those calls" in sent[-1]["content"]


def test_model_error_denied_and_failed_check_runs_resume(fake, workspace, agent_run):
    fake.add(error(400, body={"error": {"message": "bad request"}}))
    broken = agent_run("task.md")
    assert broken.code == 6
    before = len(fake.requests)
    fake.add(reply("fine now"))
    check_resumed(fake, before, broken.run_dir, agent_run("resume", str(broken.run_dir)), note="model_error")

    fake.add(reply(calls=[("write", {"path": "x.txt", "content": "x"})]), reply("could not write"))
    denied = agent_run("--policy", "strict", "task.md")
    assert denied.code == 3
    before = len(fake.requests)
    fake.add(reply("understood"))
    check_resumed(fake, before, denied.run_dir, agent_run("resume", str(denied.run_dir)),
                  note="calls the policy denied")

    (workspace / "check.md").write_text("---\ncheck: test -f done.txt\n---\nCreate done.txt\n")
    fake.add(*[reply("done (not really)")] * 3)  # the check's 3 attempts: its failures are in the conversation
    approve = ("--approve", "bash:shell:test -f done.txt")
    failed = agent_run(*approve, "check.md")
    assert failed.code == 1 and failed.summary["check"]["ok"] is False
    before = len(fake.requests)
    fake.add(reply(calls=[("write", {"path": "done.txt", "content": "ok"})]), reply("now it is"))
    resumed = agent_run("resume", str(failed.run_dir), "the check failed: create done.txt", *approve)
    check_resumed(fake, before, failed.run_dir, resumed, note="the check `test -f done.txt` failed")
    assert resumed.summary["check"]["ok"] is True


def test_a_finished_run_takes_a_follow_up_question_from_stdin(fake, workspace, agent_run):
    fake.add(reply("four"))
    done = agent_run("task.md")
    assert done.code == 0
    before = len(fake.requests)
    fake.add(reply("five"))
    resumed = agent_run("resume", "--last", "-", input="and plus one?\n")
    sent = check_resumed(fake, before, done.run_dir, resumed, note="had finished")
    assert sent[-2] == {"role": "assistant", "content": "four"} or sent[-2]["content"] == "four"
    assert sent[-1]["content"].endswith("and plus one?")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_an_interrupted_or_killed_run_resumes(fake, workspace, agent_run, sig, agent_run_zygote):
    (workspace / "a.txt").write_text("alpha\n")
    fake.add(reply(calls=[("read", {"path": "a.txt"})]), hang(600))  # answers only once the test is over
    proc = _start(fake, workspace, "task.md", zygote=agent_run_zygote)
    run_dir = _wait_for_event(workspace, "model_request")
    until(lambda: len(fake.requests) >= 2, "the second model request to reach the server")
    proc.send_signal(sig)
    proc.wait(timeout=HANG_S)
    proc.stdout.close()
    proc.stderr.close()
    assert (run_dir / "summary.json").exists() is (sig == signal.SIGTERM)
    before = len(fake.requests)
    fake.add(reply("resumed fine"))
    resumed = agent_run("resume", str(run_dir))
    note = "was killed after turn 1" if sig == signal.SIGKILL else "interrupted"
    check_resumed(fake, before, run_dir, resumed, note=note)
    if sig == signal.SIGKILL:  # its lock file was left behind by a dead process: taken over, and said so
        assert resumed.summary["lock_takeover"]["pid"] == proc.pid
        assert resumed.summary["resumed_from"]["status"] == "killed"


def test_fork_keeps_turns_up_to_n_and_leaves_the_original_untouched(fake, workspace, agent_run):
    for name in ("a", "b", "c"):
        (workspace / f"{name}.txt").write_text(name)
    fake.add(*[reply(calls=[("read", {"path": f"{n}.txt"})]) for n in "abc"], reply("read all three"))
    original = agent_run("task.md")
    assert original.code == 0
    kept = files_of(original.run_dir)
    before = len(fake.requests)
    fake.add(reply("only a, then"))
    forked = agent_run("fork", str(original.run_dir), "--at", "1", "stop after the first file")
    assert forked.code == 0, forked.stderr
    sent = fake.requests[before]["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "user"]
    assert sent[3]["content"].endswith("a") and "forked from run" in sent[-1]["content"]
    assert sent[-1]["content"].endswith("stop after the first file")
    assert forked.summary["resumed_from"] == {"run_id": original.run_dir.name, "kind": "fork", "at_turn": 1,
                                              "run_dir": f".agent-run/runs/{original.run_dir.name}",
                                              "status": "success"}
    assert files_of(original.run_dir) == kept  # nothing of the original was rewritten
    shown = agent_run("runs", "show", str(original.run_dir))
    assert f"then:     fork {forked.run_dir.name}" in shown.stdout
    listed = agent_run("runs", "list")
    assert f"[fork of {original.run_dir.name} at turn 1]" in listed.stdout
    bad = agent_run("fork", str(original.run_dir), "--at", "9")
    assert bad.code == 2 and "has turns 1..4" in bad.stderr


def _git(ws: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=t", *args], cwd=ws, check=True,
                   capture_output=True)


def _agent_edited_a_committed_file(fake, workspace: Path, agent_run):
    """A git workspace with notes.txt committed; a run (stopped by its turn budget) that rewrote it."""
    (workspace / "notes.txt").write_text("v1\n")
    _git(workspace, "init", "-q")
    _git(workspace, "add", "notes.txt", "task.md")
    _git(workspace, "commit", "-qm", "base")
    fake.add(reply(calls=[("read", {"path": "notes.txt"}),
                          ("write", {"path": "notes.txt", "content": "v2 by the agent\n"})]))
    return agent_run("--max-turns", "1", "task.md")


def test_a_changed_workspace_is_refused_and_apply_changes_resumes_a_fresh_checkout(fake, workspace, agent_run,
                                                                                   tmp_path, agent_run_zygote):
    first = _agent_edited_a_committed_file(fake, workspace, agent_run)
    assert first.code == 5 and "notes.txt" in (first.run_dir / "changes.patch").read_text()

    (workspace / "notes.txt").write_text("someone else's edit\n")
    refused = agent_run("resume", str(first.run_dir))
    assert refused.code == 2 and refused.new_dirs == []
    assert "not in the state" in refused.stderr and "notes.txt (differs)" in refused.stderr
    assert "--apply-changes" in refused.stderr

    # A laptop: a fresh checkout of the base, the CI artifact unpacked into it.
    laptop = tmp_path / "laptop"
    subprocess.run(["git", "clone", "-q", str(workspace), str(laptop)], check=True)
    shutil.copytree(first.run_dir, laptop / ".agent-run" / "runs" / first.run_dir.name)
    fake.add(reply("continued on the laptop"))
    ref = f".agent-run/runs/{first.run_dir.name}"
    plain = cli(["agent-run", "resume", ref], laptop, fake, agent_run_zygote)
    assert plain.returncode == 2 and "notes.txt (differs)" in plain.stderr
    applied = cli(["agent-run", "resume", ref, "--apply-changes"], laptop, fake, agent_run_zygote)
    assert applied.returncode == 0, applied.stderr
    assert (laptop / "notes.txt").read_text() == "v2 by the agent\n"
    replayed = agent_run("replay", str(first.run_dir), "--approve")  # a replay checks the workspace too
    assert replayed.code == 2 and "not in the state" in replayed.stderr
    fake.add(reply("going on regardless"))
    forced = agent_run("resume", str(first.run_dir), "--force")
    assert forced.code == 0, forced.stderr


def test_a_moved_run_directory_replays_and_resumes_with_the_commands_it_printed(fake, workspace, agent_run,
                                                                                 tmp_path, agent_run_zygote):
    fake.add(reply(calls=[("bash", {"command": "echo hi > out.txt"})]), reply("blocked"))
    denied = agent_run("--policy", "strict", "--sandbox", "off", "task.md")
    assert denied.code == 3
    replay_cmd = denied.summary["replay"]
    resume_cmd = denied.summary["resume"]
    rerun = denied.summary["denials"][0]["rerun"]
    for command in (replay_cmd, resume_cmd, denied.summary["denials"][0]["replay"], rerun):
        assert str(tmp_path) not in command and "site-packages" not in command, command
    assert "--policy strict" in rerun
    moved = tmp_path / "elsewhere"
    shutil.move(workspace, moved)
    replayed = cli(shlex.split(replay_cmd), moved, fake, agent_run_zygote, AGENT_RUN_SANDBOX="off")
    assert replayed.returncode == 0, replayed.stderr
    assert (moved / "out.txt").read_text() == "hi\n"
    fake.add(reply("resumed after the move"))
    (moved / "out.txt").unlink()  # the replay's own change: the run left no out.txt
    resumed = cli(shlex.split(resume_cmd), moved, fake, agent_run_zygote, AGENT_RUN_SANDBOX="off")
    assert resumed.returncode == 0, resumed.stderr


def test_a_run_in_progress_cannot_be_resumed_or_run_beside(fake, workspace, agent_run, agent_run_zygote):
    # The first run waits on a server that answers only once the test is over, so it holds its lock throughout:
    # a resume that waited for the lock instead of refusing would run into agent_run's timeout.
    fake.add(hang(600))
    proc = _start(fake, workspace, "task.md", zygote=agent_run_zygote)
    try:
        run_dir = _wait_for_event(workspace, "model_request")
        busy = agent_run("resume", str(run_dir))
        assert busy.code == 2 and f"pid {proc.pid}" in busy.stderr and "started" in busy.stderr
        assert busy.new_dirs == []
        beside = agent_run("task.md")
        assert beside.code == 2 and "in use" in beside.stderr and "--shared-workspace" in beside.stderr
        fake.add(reply("side by side"))
        shared = agent_run("--shared-workspace", "task.md")
        assert shared.code == 0, shared.stderr
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=HANG_S)


def test_a_resume_reuses_the_recorded_tools_and_prompt(fake, workspace, agent_run):
    fake.add(reply(calls=[("list", {})]))
    first = agent_run("--max-turns", "1", "task.md")
    recorded = json.loads((first.run_dir / "tools.json").read_text())
    assert recorded == fake.requests[-1]["tools"]
    (workspace / "task.md").write_text("A different task now.\n")  # the workspace copy is not re-read
    fake.add(reply("ok"))
    resumed = agent_run("resume", str(first.run_dir))
    assert resumed.code == 0
    assert fake.requests[-1]["tools"] == recorded
    assert fake.requests[-1]["messages"][1]["content"] == "Do the thing.\n"


def test_force_still_applies_the_changes_it_was_asked_to(fake, workspace, agent_run, tmp_path, agent_run_zygote):
    first = _agent_edited_a_committed_file(fake, workspace, agent_run)
    laptop = tmp_path / "laptop"
    subprocess.run(["git", "clone", "-q", str(workspace), str(laptop)], check=True)
    (laptop / "other.txt").write_text("an unrelated local file\n")
    shutil.copytree(first.run_dir, laptop / ".agent-run" / "runs" / first.run_dir.name)
    fake.add(reply("continued"))
    forced = cli(["agent-run", "resume", f".agent-run/runs/{first.run_dir.name}", "--apply-changes", "--force"],
                 laptop, fake, agent_run_zygote)
    assert forced.returncode == 0, forced.stderr
    assert (laptop / "notes.txt").read_text() == "v2 by the agent\n"  # --force did not drop --apply-changes


def test_a_broken_run_directory_and_flags_resume_cannot_apply_are_usage_errors(fake, workspace, agent_run):
    fake.add(reply(calls=[("list", {})]))
    first = agent_run("--max-turns", "1", "task.md")
    ignored = agent_run("resume", str(first.run_dir), "--instructions", "task.md")
    assert ignored.code == 2 and "--instructions" in ignored.stderr and ignored.new_dirs == []
    (first.run_dir / "workspace.json").chmod(0o644)
    (first.run_dir / "workspace.json").write_text("{not json")
    broken = agent_run("resume", str(first.run_dir), "--force")
    assert broken.code == 2 and "Traceback" not in broken.stderr


def test_a_resume_checks_the_whole_chain_it_continues(fake, workspace, agent_run):
    """The first run wrote a.txt, its resume wrote b.txt; a.txt lost since: resuming the resume is refused for
    a.txt too (issue 42, item 10: only the files the resumed run changed were checked)."""
    fake.add(reply(calls=[("write", {"path": "a.txt", "content": "first\n"})]))
    first = agent_run("--max-turns", "1", "task.md")
    assert first.code == 5, first.stderr
    fake.add(reply(calls=[("write", {"path": "b.txt", "content": "second\n"})]))
    second = agent_run("resume", "--max-turns", "1", str(first.run_dir), "go on")
    assert second.code == 5, second.stderr
    assert set(json.loads((second.run_dir / "workspace.json").read_text())["files"]) == {"b.txt"}
    (workspace / "a.txt").unlink()
    refused = agent_run("resume", str(second.run_dir), "and on")
    assert refused.code == 2 and refused.new_dirs == [], refused.stderr
    assert "not in the state" in refused.stderr and "a.txt (missing)" in refused.stderr
    (workspace / "a.txt").write_text("first\n")
    fake.add(reply("done"))
    assert agent_run("resume", str(second.run_dir), "and on").code == 0
