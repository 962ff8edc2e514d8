"""Replay of a recorded run (offline, deterministic) and interrupts that still
leave a complete run directory."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess

import pytest

from tests.conftest import agent_run_argv, clean_env
from tests.fakes.openai_server import hang, reply
from tests.fakes.procs import wait_gone
from tests.fakes.wait import HANG_S, until
from tests.fakes.zygote import popen


def _calls(result):
    return [(e["tool"], e["arguments"]) for e in result.of_type("tool_call")]


def test_replay_reproduces_calls_and_exit_code_offline(fake, workspace, agent_run, tmp_path):
    (workspace / "src.txt").write_text("v1\n")
    pristine = tmp_path / "pristine"
    shutil.copytree(workspace, pristine)
    fake.add(
        reply(calls=[("read", {"path": "src.txt"})]),
        reply(calls=[("edit", {"path": "src.txt", "old_string": "v1", "new_string": "v2"}),
                     ("bash", {"command": "echo denied"})]),
        reply("Bumped to v2."),
    )
    recorded = agent_run("task.md")
    assert recorded.code == 3
    record_dir = tmp_path / "recording"
    shutil.copytree(recorded.run_dir, record_dir)
    recorded_calls = _calls(recorded)
    recorded_prompts = [e["prompt_sha256"] for e in recorded.of_type("model_request")]

    for _ in range(2):  # repeatable: same start, same calls, same exit code
        shutil.rmtree(workspace)
        shutil.copytree(pristine, workspace)
        again = agent_run("--model", f"replay:{record_dir}", "task.md",
                          env={"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_API_KEY": ""})
        assert again.code == recorded.code, again.stderr
        assert _calls(again) == recorded_calls
        assert again.stdout == recorded.stdout
        assert (workspace / "src.txt").read_text() == "v2\n"
        prompts = [e["prompt_sha256"] for e in again.of_type("model_request")]
        assert prompts == recorded_prompts
    assert len(fake.requests) == 3


def test_replay_that_runs_out_is_model_error(fake, workspace, agent_run, tmp_path):
    fake.add(reply(calls=[("list", {})]), reply("done"))
    recorded = agent_run("task.md")
    events = (recorded.run_dir / "events.jsonl").read_text().splitlines()
    short = tmp_path / "short"
    short.mkdir()
    (short / "events.jsonl").write_text("\n".join(e for e in events if '"model_response"' not in e or
                                                  '"turn":1' in e) + "\n")
    r = agent_run("--model", f"replay:{short}", "task.md")
    assert r.code == 6
    assert "ran out after 1 responses" in r.summary["reason"]


def test_replay_warns_when_the_task_or_the_policy_differs_from_the_recording(fake, workspace, agent_run):
    fake.add(reply("done"))
    recorded = agent_run("task.md")
    assert recorded.code == 0, recorded.stderr
    offline = {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_API_KEY": ""}
    same = agent_run("--model", f"replay:{recorded.run_dir}", "task.md", env=offline)
    assert same.code == 0 and "warning: replay" not in same.stderr, same.stderr
    (workspace / "task.md").write_text("Do another thing.\n", encoding="utf-8")
    other = agent_run("--model", f"replay:{recorded.run_dir}", "--policy", "strict", "task.md", env=offline)
    assert other.code == 0, other.stderr
    assert "warning: replay: the task differs from the recording's" in other.stderr
    assert "warning: replay: the policy differs from the recording's" in other.stderr


def test_replay_of_missing_dir_is_usage_error(agent_run, tmp_path):
    r = agent_run("--model", f"replay:{tmp_path / 'nope'}", "task.md")
    assert r.code == 2 and "events.jsonl not found" in r.summary["reason"]


def _start(fake, workspace, *args, zygote=None):
    """`agent-run ARGS` in the background: forked from `zygote` (the worker's) when given and it serves, else the
    executable; a real process either way, that signals reach directly."""
    env = clean_env(OPENAI_BASE_URL=fake.base_url, OPENAI_API_KEY="sk-test")
    return popen(zygote, [*agent_run_argv(), *args], cwd=workspace, env=env, stdin=subprocess.DEVNULL,
                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for_event(workspace, type_, timeout=HANG_S):
    def recorded():
        for log in (workspace / ".agent-run" / "runs").glob("*/events.jsonl"):
            if f'"type":"{type_}"' in log.read_text():
                return log.parent
        return None

    return until(recorded, f"a {type_} event", timeout)


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_signal_during_model_call(fake, workspace, sig, code, agent_run_zygote):
    # The server answers only once the test is over: the run can only end by the signal.
    fake.add(hang(600), reply("too late"))
    proc = _start(fake, workspace, "task.md", zygote=agent_run_zygote)
    run_dir = _wait_for_event(workspace, "model_request")
    until(lambda: fake.requests, "the model request to reach the server")
    proc.send_signal(sig)
    assert proc.wait(timeout=HANG_S) == code
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "interrupted" and summary["exit_code"] == code
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    assert events[-1]["type"] == "run_finished" and events[-1]["exit_code"] == code
    assert events[-2]["type"] == "interrupted" and events[-2]["during"] == "model_request"
    assert events[-2]["signal"] == signal.Signals(sig).name


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_signal_during_tool_kills_it(fake, workspace, sig, code, agent_run_zygote):
    # The sleep outlasts every wait below: it is gone only if the run killed it.
    fake.add(reply(calls=[("bash", {"command": "echo $$ > pid.txt; sleep 300"})]), reply("never"))
    proc = _start(fake, workspace, "--sandbox", "off", "--approve", "bash:shell:*", "task.md", zygote=agent_run_zygote)
    run_dir = _wait_for_event(workspace, "tool_call")
    # The shell creates pid.txt before it writes to it: wait for the whole line.
    pid_file = workspace / "pid.txt"
    until(lambda: pid_file.is_file() and pid_file.read_text().endswith("\n"), "the tool's pid in pid.txt")
    pid = int(pid_file.read_text())
    proc.send_signal(sig)
    assert proc.wait(timeout=HANG_S) == code
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "interrupted" and summary["tool_calls"] == 1
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    assert [e["type"] for e in events[-3:]] == ["permission_decision", "interrupted", "run_finished"]
    assert wait_gone(pid), "the tool's process outlived the run"
