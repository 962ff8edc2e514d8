"""`cleanup` keeps the runs a kept run went on from (resume, fork, replay: its lineage, transitively), says why,
and removes them only with --break-lineage."""

from __future__ import annotations

import json
import os
import shutil
import time

from tests.fakes.openai_server import reply

_OLD = time.time() - 30 * 86400


def _age(run_dir) -> None:
    os.utime(run_dir / "summary.json", (_OLD, _OLD))


def test_cleanup_keeps_the_ancestors_of_kept_runs(fake, workspace, agent_run):
    fake.add(reply("first"))
    first = agent_run("task.md")
    assert first.code == 0, first.stderr
    fake.add(reply("second"))
    second = agent_run("resume", str(first.run_dir), "go on")
    assert second.code == 0, second.stderr
    fake.add(reply("third"))
    third = agent_run("resume", str(second.run_dir), "and on")
    assert third.code == 0, third.stderr
    runs_dir = first.run_dir.parent
    unrelated = runs_dir / "20200101T000000000000Z-000000"  # an old run nothing went on from
    shutil.copytree(first.run_dir, unrelated)
    for run in (first.run_dir, second.run_dir, unrelated):
        _age(run)

    kept = agent_run("cleanup", "--older-than", "7d")
    assert kept.code == 0, kept.stderr
    assert kept.stdout.splitlines() == [str(unrelated)]
    assert (f"kept {first.run_dir.name}: ancestor of {second.run_dir.name} (--break-lineage removes it)"
            in kept.stderr.splitlines())
    assert f"kept {second.run_dir.name}: ancestor of {third.run_dir.name}" in kept.stderr
    assert first.run_dir.is_dir() and second.run_dir.is_dir() and not unrelated.exists()
    # The kept run can still go on from its lineage.
    fake.add(reply("fourth"))
    fourth = agent_run("resume", str(third.run_dir), "once more")
    assert fourth.code == 0, fourth.stderr
    assert fourth.summary["resumed_from"]["run_id"] == third.summary["run_id"]
    assert [json.loads(line)["type"] for line in (fourth.run_dir / "events.jsonl").read_text().splitlines()][-1] \
        == "run_finished"

    broken = agent_run("cleanup", "--older-than", "7d", "--break-lineage")
    assert broken.code == 0, broken.stderr
    assert sorted(broken.stdout.splitlines()) == sorted([str(first.run_dir), str(second.run_dir)])
    assert "kept" not in broken.stderr
    assert third.run_dir.is_dir() and fourth.run_dir.is_dir()
    # As docs/sessions.md says: the kept run still resumes (its conversation is in its own log); what it inherited
    # from the removed runs (their spill files) is gone with them.
    fake.add(reply("fifth"))
    fifth = agent_run("resume", str(fourth.run_dir), "after the break")
    assert fifth.code == 0, fifth.stderr
    assert fifth.summary["resumed_from"]["run_id"] == fourth.summary["run_id"]
