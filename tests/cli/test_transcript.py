"""A failed check's output, readable where people look: stderr, the step summary, JUnit, transcript.md;
and `runs show --transcript`."""

from __future__ import annotations

import signal

from tests.cli.test_replay_and_signals import _start, _wait_for_event
from tests.fakes.openai_server import reply
from tests.fakes.wait import HANG_S, until

CHECK_TASK = "---\ncheck: python3 -c \"assert 1 == 2, 'the assertion text'\"\n---\nGo.\n"


def test_a_failed_checks_output_is_everywhere_a_person_looks(fake, workspace, agent_run, tmp_path):
    (workspace / "check.md").write_text(CHECK_TASK, encoding="utf-8")
    fake.add(reply("Looking first.", calls=[("bash", {"command": "seq 1 100"}), ("bash", {"command": "rm -rf x"})]),
             reply("all done"))
    step_summary = tmp_path / "step-summary.md"
    result = agent_run("check.md", "--approve", "bash:shell:python3 *", "--approve", "bash:shell:seq *",
                       "--sandbox", "off", "--junit", "out.xml", "--check-attempts", "1",  # one check: its report
                       env={"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(step_summary)})
    assert result.code == 1, result.stderr
    check = result.summary["check"]
    assert check["ok"] is False and "AssertionError: the assertion text" in check["output_tail"]

    assert "  AssertionError: the assertion text" in result.stderr.splitlines()
    summary_md = step_summary.read_text(encoding="utf-8")
    assert "<details><summary>The check's output" in summary_md and "the assertion text" in summary_md
    junit = (workspace / "out.xml").read_text(encoding="utf-8")
    assert "AssertionError: the assertion text" in junit.split("<failure", 1)[1].split("</failure>", 1)[0]

    transcript = (result.run_dir / "transcript.md").read_text(encoding="utf-8")
    assert transcript.startswith("# agent-run: check.md")
    task, turn1, turn2 = transcript.index("## Task"), transcript.index("## Turn 1"), transcript.index("## Turn 2")
    answer, check_at = transcript.index("## Final answer"), transcript.index("## Check")
    assert task < turn1 < turn2 < answer < check_at < transcript.index("## Denied calls (1)")
    assert "> Looking first." in transcript and "> all done" in transcript[answer:check_at]
    assert "AssertionError: the assertion text" in transcript[check_at:]
    # A long output is cut for reading (bash: its last lines), and the rule that allowed it named.
    assert "Decision: **allow** by rule `allow shell:seq *` (--approve)" in transcript
    assert "\n100\n" in transcript and "\n50\n" not in transcript and "60 more line(s) above not shown" in transcript
    replay = result.summary["denials"][0]["replay"]
    assert f"approve and run it: `{replay}`" in transcript
    # The one command that helps ends stderr: here, approving the denied call.
    assert result.stderr.splitlines()[-1] == f"agent-run: next: {replay}"

    shown = agent_run("runs", "show", str(result.run_dir), "--transcript")
    assert shown.code == 0, shown.stderr
    assert "> all done" in shown.stdout
    assert "Decision: **deny** (the policy says `ask`; nobody can approve in a headless run)" in shown.stdout
    assert shown.stdout == transcript


def test_a_transcript_is_written_for_a_plain_success_too(fake, workspace, agent_run):
    fake.add(reply("```\nfenced ``` inside\n```"))
    result = agent_run("task.md", "--output-format", "text")
    assert result.code == 0, result.stderr
    transcript = (result.run_dir / "transcript.md").read_text(encoding="utf-8")
    assert "## Task\n\n```markdown\nDo the thing.\n```" in transcript
    assert "## Usage" in transcript and "agent-run: next:" not in result.stderr


def test_an_interrupted_run_has_its_transcript(fake, workspace):
    fake.add(reply("Waiting.", calls=[("bash", {"command": "touch tool-started; sleep 300"})]), reply("never"))
    proc = _start(fake, workspace, "task.md", "--approve", "bash:shell:*", "--sandbox", "off")
    run_dir = _wait_for_event(workspace, "permission_decision")
    until(lambda: (workspace / "tool-started").exists(), "the tool to start")
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=HANG_S) == 130
    transcript = (run_dir / "transcript.md").read_text(encoding="utf-8")
    assert transcript.startswith("# agent-run: ") and "**interrupted** (exit 130)" in transcript
    assert "> Waiting." in transcript and "sleep 300" in transcript
    assert "🛑 **Interrupted** by SIGINT" in transcript

