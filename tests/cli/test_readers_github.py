"""Issue 41 item 4, through the real CLI: every command that prints what a run recorded (the model's text, tool
output, a task's title, a call's command) prints it, on GitHub Actions, between `::stop-commands::TOKEN` and
`::TOKEN::` (runner/cli/fence.py), so a recorded `::add-mask::` or `::warning::` line never acts on the job.

The output is read as the job's log reads it: stdout and stderr through one pipe, in the order written."""

from __future__ import annotations

import json
import re

from tests.fakes.openai_server import reply

HOSTILE = "::add-mask::x\n::warning::x"
MARKERS = ("::add-mask::x", "::warning::x")
STOP = re.compile(r"::stop-commands::(\S+)")


def unfenced(output: str) -> list[str]:
    """The lines holding a workflow command of the recording that GitHub's runner would act on (one that starts
    with `::` once leading blanks are trimmed) and that are not between a stop-commands line and its end token."""
    out, token = [], None
    for line in output.splitlines():
        if token is None and (m := STOP.fullmatch(line)):
            token = m.group(1)
        elif token is not None and line == f"::{token}::":
            token = None
        elif token is None and line.lstrip().startswith(MARKERS):
            out.append(line)
    return out


def test_a_readers_recorded_text_cannot_issue_workflow_commands(fake, workspace, agent_run):
    (workspace / "task.md").write_text("# ::warning::x in the title\nDo the thing.\n", encoding="utf-8")
    fake.add(reply(calls=[("bash", {"command": "printf '::add-mask::x\\n::warning::x\\n'"}),
                          ("bash", {"command": f"true\n{HOSTILE}"})]),
             reply(f"{HOSTILE}\nanswered"))
    r = agent_run("--sandbox", "off", "--approve", "bash:shell:printf *", "task.md")
    assert r.code == 3, r.stderr  # the second command is denied: `replay` lists it
    assert HOSTILE in r.of_type("tool_result")[0]["content"]
    run = str(r.run_dir)
    readers = [("replay", run), ("runs", "show", run), ("runs", "show", "--transcript", run),
               ("runs", "show", "--json", run), ("runs", "show", "--audit", run), ("runs", "list"),
               ("policy", "simulate", "--policy", "full-access", run), ("policy", "suggest", run)]
    found = {}
    for argv in readers:
        shown = agent_run(*argv, env={"GITHUB_ACTIONS": "true"}, merged=True)
        assert shown.code == 0, (argv, shown.stdout)
        assert any(marker in shown.stdout for marker in MARKERS), (argv, shown.stdout)  # the text is there
        found[" ".join(a for a in argv if a != run)] = unfenced(shown.stdout)[:1]
    assert found == {name: [] for name in found}
    # The fence is on stdout, the stream the text is on (GitHub reads the two on separate threads) — except JSON,
    # which no line of can act through and which stays parseable; and a stdout that is a file is not the log.
    shown = agent_run("runs", "show", run, env={"GITHUB_ACTIONS": "true"})
    assert STOP.search(shown.stdout) and not STOP.search(shown.stderr), shown.stderr
    assert isinstance(json.loads(agent_run("runs", "show", "--json", run, env={"GITHUB_ACTIONS": "true"}).stdout), dict)
