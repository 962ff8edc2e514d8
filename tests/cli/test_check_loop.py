"""The task's check drives the loop (issue 44 item 1), through the CLI: a failed check's output goes back to the
model as the next user message and that request asks for an action; up to --check-attempts (default 3; the task's
front matter may only lower it), each attempt a turn; exit 1 only when the attempts run out."""

from __future__ import annotations

import re

from tests.fakes.dialects import use
from tests.fakes.openai_server import reply

CHECK = "sh check.sh"


def _task(workspace, front: str = "") -> None:
    (workspace / "check.sh").write_text("test -f fixed.txt || { echo 'FAILED: fixed.txt is missing'; exit 1; }\n")
    (workspace / "t.md").write_text(f"---\ncheck: {CHECK}\n{front}---\nMake the check pass.\n")


def test_a_failing_checks_output_reaches_the_model_and_a_second_attempt_passes(fake, workspace, agent_run):
    use(fake, "openai")
    _task(workspace)
    fake.add(reply("The task is complete."), reply(calls=[("write", {"path": "fixed.txt", "content": "ok\n"})]),
             reply("The task is complete."))
    r = agent_run("--approve", f"bash:shell:{CHECK}", "t.md")
    assert r.code == 0, r.stderr
    told = fake.requests[1]["messages"][-1]
    assert told["role"] == "user" and told["content"].startswith(f"[agent-run: the check `{CHECK}` failed")
    assert "continue with a tool call" in told["content"]
    # the output is data inside a frame its text cannot end (a nonce drawn for the run)
    assert re.search(r"<(check-output-[0-9a-f]{16})>\nFAILED: fixed.txt is missing\n</\1>", told["content"])
    assert [q.get("tool_choice") for q in fake.requests] == ["auto", "required", "auto"]
    assert [(e["attempt"], e["ok"]) for e in r.of_type("check_finished")] == [(1, False), (2, True)]
    assert [e["attempt"] for e in r.of_type("check_started")] == [1, 2]
    assert [e["turn"] for e in r.of_type("model_request")] == [1, 3, 4]  # the first attempt was turn 2
    s = r.summary
    assert (s["status"], s["turns"], s["tool_calls"], s["check"]["ok"]) == ("success", 4, 1, True)
    first, second = s["check"]["attempts"]
    assert (first["attempt"], first["ok"], second["attempt"], second["ok"]) == (1, False, 2, True)
    assert "FAILED: fixed.txt is missing" in first["output_tail"]
    assert [m["reason"] for m in r.of_type("user_message")] == ["check_failed"]


def test_a_check_that_never_passes_ends_exit_1_after_3_attempts(fake, workspace, agent_run):
    _task(workspace, "check_attempts: 9\n")  # front matter may only lower the attempts
    fake.add(reply("The task is complete."), reply("The task is complete."), reply("The task is complete."))
    r = agent_run("--approve", f"bash:shell:{CHECK}", "--max-turns", "10", "t.md")
    assert r.code == 1, r.stderr
    assert [(e["attempt"], e["ok"]) for e in r.of_type("check_finished")] == [(1, False), (2, False), (3, False)]
    assert [e["turn"] for e in r.of_type("model_request")] == [1, 3, 5]
    assert [q.get("tool_choice") for q in fake.requests] == ["auto", "required", "required"]
    s = r.summary
    assert s["status"] == "failed" and s["reason"].startswith(f"the check `{CHECK}` failed") \
        and "after 3 attempts" in s["reason"]
    assert len(s["check"]["attempts"]) == 3 and s["turns"] == 5  # the model's turns; the checks' were 2, 4, 6


def test_check_attempts_1_and_answer_nudges_0_are_todays_behaviour(fake, workspace, agent_run):
    _task(workspace)
    fake.add(reply("I fixed it."))
    r = agent_run("--approve", f"bash:shell:{CHECK}", "--check-attempts", "1", "t.md",
                  env={"AGENT_RUN_ANSWER_NUDGES": "0"})
    assert r.code == 1, r.stderr
    assert len(fake.requests) == 1 and not r.of_type("answer_refused") and not r.of_type("user_message")
    finished, = r.of_type("check_finished")
    s = r.summary
    assert s["reason"] == f"the check `{CHECK}` failed (ExitNonZero, exit code 1)" and "attempts" not in s["check"]
    assert {k: finished[k] for k in s["check"]} == s["check"] and s["turns"] == 1


def test_a_failed_check_that_leaves_the_model_no_turn_is_the_last(fake, workspace, agent_run):
    _task(workspace)
    fake.add(reply("The task is complete."))
    r = agent_run("--approve", f"bash:shell:{CHECK}", "--max-turns", "2", "t.md")  # the answer 1, the check 2
    assert r.code == 1, r.stderr
    assert len(fake.requests) == 1 and len(r.of_type("check_finished")) == 1
    reason = f"the check `{CHECK}` failed (ExitNonZero, exit code 1) after 1 attempt (no turn left)"
    assert r.summary["reason"] == reason
