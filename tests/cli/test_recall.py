"""Issue 34 item 3, through the real CLI: what truncation cut is recalled by memory_search from the run's spill
files (named by path and line, so the model can `read` around it), and a spill that the run directory's
outputs/ cannot take goes to the fallback directory in $RUNNER_TEMP, recorded as the result's `output_path`."""

from __future__ import annotations

import re
from pathlib import Path

from tests.fakes.openai_server import reply

# 3,000 lines: past the 2,000-line limit, so bash's result keeps the tail and line 500 lives only in the spill.
BIG = "seq 1 3000 | sed 's/^500$/KIWI-MARKER-500/'"
ARGS = ("--sandbox", "off", "--approve", "bash:shell:*", "task.md")


def _hit(content: str) -> tuple[Path, int]:
    found = re.search(r"\[spill (\S+) · line (\d+)\] [^\n]*KIWI-MARKER-500", content)
    assert found, content
    return Path(found[1]), int(found[2])


def test_memory_search_finds_a_marker_that_only_survives_in_a_spill_file(fake, workspace, agent_run):
    fake.add(reply(calls=[("bash", {"command": BIG})]),
             reply(calls=[("memory_search", {"query": "kiwi-marker"})]), reply("done"))
    r = agent_run(*ARGS)
    assert r.code == 0, r.stderr
    bash, search = r.of_type("tool_result")
    assert bash["details"]["truncated"] and "KIWI-MARKER" not in bash["content"]
    path, line = _hit(search["content"])
    assert line == 500 and path == Path(bash["details"]["output_path"]) and path.parent == r.run_dir / "outputs"
    assert search["details"]["spill_matches"] == 1
    assert r.summary["status"] == "success"


def test_when_outputs_cannot_be_written_spills_go_to_runner_temp_and_are_recalled(fake, workspace, agent_run,
                                                                                  tmp_path):
    temp = tmp_path / "runner-temp"
    temp.mkdir()
    # The run's outputs/ made a file (the tests run as root, whom a mode would not stop): no spill goes there.
    block = "for d in .agent-run/runs/*/; do rm -rf \"$d/outputs\"; touch \"$d/outputs\"; done"
    fake.add(reply(calls=[("bash", {"command": block})]), reply(calls=[("bash", {"command": BIG})]),
             reply(calls=[("memory_search", {"query": "KIWI-MARKER-500"})]), reply("done"))
    r = agent_run(*ARGS, env={"RUNNER_TEMP": str(temp)})
    assert r.code == 0, r.stderr
    first, bash, search = r.of_type("tool_result")
    assert first["ok"], first
    where = Path(bash["details"]["output_path"])
    assert where.parent.parent == temp and where.is_file() and "outputs" in bash["details"]["spill_fallback"]
    assert str(where) in bash["content"]  # the model is told where the whole output is
    assert _hit(search["content"]) == (where, 500)
    assert r.summary["status"] == "success"
