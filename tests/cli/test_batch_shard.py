"""`batch --shard I/N|auto` and `batch-merge DIR...`: four shards of a 10-task batch partition it by the rule
(task k of the sorted list runs in shard k mod N + 1), and their merged outputs are the unsharded batch's
verdicts, exit code and JUnit cases; a shard that never reported fails the merge, naming its index."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import xmlschema

from tests.fakes.openai_server import reply

XSD = Path(__file__).resolve().parents[1] / "fixtures" / "junit-10.xsd"
# Given out of order on purpose: the shard rule sorts by code point, whatever order a shell's glob gives.
TASKS = ["t07.md", "t02.md", "t10.md", "t00.md", "t05.md", "t01.md", "t09.md", "t04.md", "t08.md", "t03.md"]
DENIED, BUDGET = "t02.md", "t07.md"  # sorted positions 2 and 6 (no t06): both in shard 3


def _script(fake, workspace: Path, passes: int) -> None:
    """Each task's conversation, once per pass: one denied `make` (exit 3), one over its one turn (exit 5),
    the rest answer at once."""
    for name in TASKS:
        marker = f"[{name}]"
        text = f"Task {marker}: do it.\n"
        if name == BUDGET:
            text = "---\nmax_turns: 1\n---\n" + text
        (workspace / name).write_text(text)
        for _ in range(passes):
            if name == DENIED:
                fake.route(marker, reply(calls=[("bash", {"command": "make"})]), reply("could not build"))
            elif name == BUDGET:
                fake.route(marker, reply(calls=[("list", {})]))
            else:
                fake.route(marker, reply(f"done {name}"))


def _verdicts(result: dict[str, Any]) -> dict[str, tuple[str, int]]:
    return {t["task"]: (t["status"], t["exit_code"]) for t in result["tasks"]}


def _runs_are_whole(result: dict[str, Any]) -> None:
    for task in result["tasks"]:
        run_dir = Path(task["run_dir"])
        events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
        assert events[0]["type"] == "run_started" and events[-1]["type"] == "run_finished"
        assert json.loads((run_dir / "summary.json").read_text())["status"] == task["status"]


def test_four_shards_partition_the_batch_and_merge_into_the_unsharded_result(fake, workspace, agent_run, tmp_path):
    _script(fake, workspace, passes=2)
    # Tasks at once (each a process importing the runner) keep this test's time down; verdicts do not depend on it.
    fast = ("-j", "4", "--shared-workspace")
    whole = agent_run("batch", *fast, *TASKS, "--junit", "whole.xml", "--runs-dir", str(tmp_path / "whole"))
    assert whole.code == 5, whole.stdout + whole.stderr
    unsharded = json.loads((tmp_path / "whole" / "batch.json").read_text())
    assert "shard" not in unsharded

    order, outputs = sorted(TASKS), []
    for index in range(1, 5):
        out = tmp_path / "artifacts" / f"shard-{index}"  # each machine's uploaded runs directory
        r = agent_run("batch", *fast, "--shard", f"{index}/4", *TASKS, "--runs-dir", str(out))
        shard = json.loads((out / "batch.json").read_text())
        assert r.code == shard["exit_code"], r.stdout + r.stderr
        assert [t["task"] for t in shard["tasks"]] == [t for k, t in enumerate(order) if k % 4 + 1 == index]
        assert shard["shard"]["index"] == index and shard["shard"]["total"] == 4
        _runs_are_whole(shard)
        outputs.append(shard)
    ran = [t["task"] for shard in outputs for t in shard["tasks"]]
    assert sorted(ran) == order  # every task in exactly one shard
    assert len({s["shard"]["tasks_sha256"] for s in outputs}) == 1
    assert [len(s["tasks"]) for s in outputs] == [3, 3, 2, 2]

    merged_dir = tmp_path / "merged"
    m = agent_run("batch-merge", *sorted(map(str, (tmp_path / "artifacts").iterdir())), "--out", str(merged_dir))
    assert m.code == whole.code == 5, m.stdout + m.stderr
    merged = json.loads((merged_dir / "batch.json").read_text())
    assert merged["exit_code"] == 5 and merged["shards"]["missing"] == []
    assert _verdicts(merged) == _verdicts(unsharded)
    assert [t["task"] for t in merged["tasks"]] == order
    assert [t["shard"] for t in merged["tasks"]] == [k % 4 + 1 for k in range(10)]
    _runs_are_whole(merged)
    xmlschema.XMLSchema(str(XSD)).validate(str(merged_dir / "junit.xml"))
    junit = xmlschema.XMLSchema(str(XSD)).to_dict(str(merged_dir / "junit.xml"))["testsuite"][0]
    assert (junit["@tests"], junit["@failures"], junit["@errors"]) == ("10", "2", "0")
    assert sorted(case["@classname"] for case in junit["testcase"]) == order
    whole_junit = xmlschema.XMLSchema(str(XSD)).to_dict(str(workspace / "whole.xml"))["testsuite"][0]
    assert sorted((c["@classname"], c["@name"], sorted(c)) for c in junit["testcase"]) == sorted(
        (c["@classname"], c["@name"], sorted(c)) for c in whole_junit["testcase"])
    summary = (merged_dir / "summary.md").read_text()
    assert "10 tasks, merged from 4 of 4 shards (exit 5)" in summary and "never reported" not in summary

    # Shard 3 (both failing tasks) never reported: its job died before it wrote batch.json.
    shutil.rmtree(tmp_path / "artifacts" / "shard-3")
    (tmp_path / "artifacts" / "shard-3").mkdir()
    gone = tmp_path / "merged-without-3"
    m = agent_run("batch-merge", *sorted(map(str, (tmp_path / "artifacts").iterdir())), "--out", str(gone),
                  "--output-format", "json")
    assert m.code == 1, m.stdout + m.stderr  # every task it has succeeded: the missing shard is the failure
    assert "shard 3 of 4 never reported" in m.stderr and "shard-3: no batch.json" in m.stderr
    merged = json.loads((gone / "batch.json").read_text())
    assert json.loads(m.stdout) == merged
    assert merged["exit_code"] == 1 and merged["shards"]["missing"] == [3] and len(merged["tasks"]) == 8
    junit = xmlschema.XMLSchema(str(XSD)).to_dict(str(gone / "junit.xml"))["testsuite"][0]
    assert (junit["@tests"], junit["@failures"]) == ("9", "1")
    failed = next(c for c in junit["testcase"] if "failure" in c)
    assert failed["@classname"] == "shard 3/4" and "never reported" in failed["failure"][0]["@message"]
    assert "**Shard 3 of 4 never reported**" in (gone / "summary.md").read_text()


def _empty_shard(agent_run, tmp_path: Path, name: str, spec: str, *tasks: str, **env: str) -> Path:
    """A real shard's output that runs nothing (its cut of the list is empty): no model, no run."""
    out = tmp_path / name
    r = agent_run("batch", *(["--shard", spec] if spec else []), *tasks, "--runs-dir", str(out), env=env)
    assert r.code == 0 and r.new_dirs == [], r.stdout + r.stderr
    return out


def test_shards_of_different_task_lists_or_given_twice_are_refused(fake, workspace, agent_run, tmp_path):
    a = _empty_shard(agent_run, tmp_path, "a", "2/2", "task.md")
    b = _empty_shard(agent_run, tmp_path, "b", "2/2", "other.md")
    r = agent_run("batch-merge", str(a), str(b), "--out", str(tmp_path / "m"))
    assert r.code == 2 and "of another batch" in r.stderr, r.stderr
    assert not (tmp_path / "m").exists()
    c = tmp_path / "c"
    shutil.copytree(a, c)
    r = agent_run("batch-merge", str(a), str(c), "--out", str(tmp_path / "m"))
    assert r.code == 2 and "shard 2/2 is given twice" in r.stderr, r.stderr
    r = agent_run("batch-merge", str(tmp_path / "nowhere"))
    assert r.code == 2 and fake.requests == []


def test_shard_auto_reads_gitlab_then_agent_run_shard(fake, workspace, agent_run, tmp_path):
    tasks = ("task.md", "b.md", "a.md")  # three tasks: shard 4 of 4 is empty
    gitlab = _empty_shard(agent_run, tmp_path, "gitlab", "auto", *tasks, CI_NODE_INDEX="4", CI_NODE_TOTAL="4",
                          AGENT_RUN_SHARD="1/4")
    assert json.loads((gitlab / "batch.json").read_text())["shard"]["index"] == 4  # GitLab's variables first
    matrix = _empty_shard(agent_run, tmp_path, "matrix", "", *tasks, AGENT_RUN_SHARD="4/4")
    assert json.loads((matrix / "batch.json").read_text())["shard"]["index"] == 4  # the variable alone shards
    r = agent_run("batch", "--shard", "auto", *tasks)
    assert r.code == 2 and "neither CI_NODE_INDEX" in r.stderr and fake.requests == []
    r = agent_run("batch", "--shard", "5/4", *tasks)
    assert r.code == 2 and "is not a shard" in r.stderr and fake.requests == []


def test_a_shards_output_is_read_as_untrusted_input(fake, workspace, agent_run, tmp_path):
    real = _empty_shard(agent_run, tmp_path, "real", "2/2", "task.md")
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "batch.json").symlink_to(real / "batch.json")  # not a regular file: not read
    fifo = tmp_path / "fifo"
    fifo.mkdir()
    os.mkfifo(fifo / "batch.json")  # would block a reader that waited for a writer
    forged = tmp_path / "forged"
    forged.mkdir()
    record = json.loads((real / "batch.json").read_text())
    (forged / "batch.json").write_text(json.dumps({**record, "shard": {**record["shard"], "index": 1},
                                                   "tasks": [{"task": "task.md", "status": "success", "exit_code": 0},
                                                             {"task": "x.md", "status": "success", "exit_code": 0}]}))
    r = agent_run("batch-merge", str(real), str(linked), str(fifo), "--out", str(tmp_path / "m"))
    assert r.code == 1 and "shard 1 of 2 never reported" in r.stderr, r.stderr
    assert "linked: batch.json unreadable" in r.stderr and "fifo: batch.json unreadable" in r.stderr
    r = agent_run("batch-merge", str(real), str(forged), "--out", str(tmp_path / "m"))
    assert r.code == 2 and "not the list they were cut from" in r.stderr, r.stderr


def test_shards_of_different_runs_are_refused_naming_their_files(fake, workspace, agent_run, tmp_path):
    tasks = ("x.md",)  # shards 2/3 and 3/3 are empty
    s2 = _empty_shard(agent_run, tmp_path, "s2", "2/3", *tasks, AGENT_RUN_BATCH_ID="run-1")
    s3 = _empty_shard(agent_run, tmp_path, "s3", "3/3", *tasks, AGENT_RUN_BATCH_ID="run-2")
    assert json.loads((s3 / "batch.json").read_text())["shard"]["batch_id"] == "run-2"
    r = agent_run("batch-merge", str(s2), str(s3), "--out", str(tmp_path / "m"))
    assert r.code == 2 and str(s2 / "batch.json") in r.stderr and str(s3 / "batch.json") in r.stderr, r.stderr
    assert not (tmp_path / "m").exists()
    # GitHub's run id first (the same for a re-run of failed jobs: GITHUB_RUN_ATTEMPT is not part of it)
    s3 = _empty_shard(agent_run, tmp_path, "s3", "3/3", *tasks, GITHUB_RUN_ID="run-1", GITHUB_RUN_ATTEMPT="2",
                      CI_PIPELINE_ID="p", AGENT_RUN_BATCH_ID="run-2")
    assert json.loads((s3 / "batch.json").read_text())["shard"]["batch_id"] == "run-1"
    r = agent_run("batch-merge", str(s2), str(s3), "--out", str(tmp_path / "m"))
    assert r.code == 1 and "shard 1 of 3 never reported" in r.stderr, r.stderr
    assert json.loads((tmp_path / "m" / "batch.json").read_text())["shards"]["batch_id"] == "run-1"
    (tmp_path / "stuck" / "batch.json").mkdir(parents=True)  # an earlier report that cannot be removed
    r = agent_run("batch", "--shard", "2/3", *tasks, "--runs-dir", str(tmp_path / "stuck"))
    assert r.code == 2 and "cannot remove the earlier" in r.stderr, r.stderr


def test_a_killed_shard_leaves_no_old_report_and_takes_its_task_with_it(fake, workspace, agent_run, tmp_path,
                                                                        agent_run_zygote):
    from tests.cli.test_batch_signals import _children
    from tests.conftest import agent_run_argv, clean_env
    from tests.fakes.openai_server import hang
    from tests.fakes.procs import wait_gone
    from tests.fakes.wait import HANG_S, until
    from tests.fakes.zygote import popen

    (workspace / "t.md").write_text("Task [t]: do it.\n")
    fake.route("[t]", reply("done before"), hang(600), reply("late"))  # the second run waits
    out = tmp_path / "out"  # the directory each run of the job uploads
    first = agent_run("batch", "--shard", "1/1", "t.md", "--runs-dir", str(out), env={"AGENT_RUN_BATCH_ID": "run-1"})
    assert first.code == 0 and (out / "batch.json").exists(), first.stderr
    env = clean_env(OPENAI_BASE_URL=fake.base_url, OPENAI_API_KEY="sk-test", AGENT_RUN_BATCH_ID="run-2")
    # Its task is the real executable (the forked batch's own interpreter's agent-run), with the batch's death signal.
    proc = popen(agent_run_zygote, [*agent_run_argv(), "batch", "--shard", "1/1", "t.md", "--runs-dir", str(out)],
                 cwd=workspace, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                 text=True)
    try:
        until(lambda: len(fake.requests) == 2, "the task to ask the model")
        [child] = until(lambda: _children(proc.pid), "the task's process")
        proc.kill()  # as the OOM killer or a cancelled runner would: nothing written, nothing passed on
        proc.communicate(timeout=HANG_S)
        assert wait_gone(child, HANG_S), "the task ran on after its batch died"
    finally:
        if proc.poll() is None:
            proc.kill()
    assert not (out / "batch.json").exists()
    r = agent_run("batch-merge", str(out), "--out", str(tmp_path / "m"))
    assert r.code == 2 and "no batch.json" in r.stderr, r.stderr
