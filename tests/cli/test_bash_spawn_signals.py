"""SIGTERM at any moment around the start of a `bash` call leaves no process behind (issue 26, item 12).

Each run is signalled twice, at randomized points after its model request reached the fake server: the
first signal may land before the command is spawned, while it is being spawned (the window between the fork
and the process group being registered), or while it runs; the second, while the first is being handled. The
command ignores SIGTERM, so only the run's SIGKILL of the group ends it: before the fix, a second signal
during the spawn or during the group's 0.2 s grace exited the runner at once and left the command running.
Every process the command became carries a token in its command line, so a survivor is found whether or not
it got as far as writing its pid."""

from __future__ import annotations

import json
import os
import random
import signal
import time
import uuid
from pathlib import Path

from tests.cli.test_sighup import start
from tests.fakes.openai_server import reply
from tests.fakes.procs import wait_gone
from tests.fakes.wait import HANG_S, until

RUNS = 10
AT_ONCE = 5


def _with_token(token: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if token.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:  # gone meanwhile
                continue
    return [pid for pid in found if not wait_gone(pid, grace_s=0)]


def _asked(fake, marker: str) -> bool:
    return any(marker in json.dumps(r.get("messages")) for r in list(fake.requests))


def _check_record(workspace: Path, code: int, err: str) -> None:
    """Exit 143 either way; the log is whole JSON lines; with a summary (the second signal came during
    cleanup, or after it), it says interrupted by SIGTERM."""
    [run_dir] = (workspace / ".agent-run" / "runs").iterdir()
    # -15: the second signal came once the run was recorded and its result printed, while the interpreter was
    # shutting down (Python has put the default handlers back by then): a shell reports that as 143 too.
    assert code == 143 or (code == -signal.SIGTERM and (run_dir / "summary.json").exists()), err
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    assert events[0]["type"] == "run_started"
    if (run_dir / "summary.json").exists():
        summary = json.loads((run_dir / "summary.json").read_text())
        assert (summary["status"], summary["signal"], summary["exit_code"]) == ("interrupted", "SIGTERM", 143)


def test_sigterm_around_the_start_of_a_bash_call_leaves_no_process(fake, tmp_path, agent_run_zygote):
    token = f"agent-run-survivor-{uuid.uuid4().hex}"
    rng = random.Random(26)  # varied, and the same from one run of the suite to the next
    command = f"trap '' TERM; echo $$ > pid.txt; exec -a {token} sleep 300"
    workspaces = []
    for i in range(RUNS):
        ws = tmp_path / f"ws{i}"
        ws.mkdir()
        (ws / "task.md").write_text(f"Task number {i}.\n")
        fake.route(f"Task number {i}.", reply(calls=[("bash", {"command": f"{command} # {token}"})]), reply("never"))
        workspaces.append(ws)
    try:
        for first in range(0, RUNS, AT_ONCE):
            batch = list(range(first, min(first + AT_ONCE, RUNS)))
            procs = {i: start(agent_run_zygote, fake, workspaces[i], "--sandbox", "off", "--approve", "bash:shell:*",
                              "task.md") for i in batch}
            for i in batch:
                until(lambda i=i: _asked(fake, f"Task number {i}."), f"run {i} to ask the model")
                time.sleep(rng.uniform(0, 0.12))  # not a wait for anything: where the signal lands, varied
                procs[i].send_signal(signal.SIGTERM)
                time.sleep(rng.uniform(0.005, 0.05))
                procs[i].send_signal(signal.SIGTERM)
            for i in batch:
                _, err = procs[i].communicate(timeout=HANG_S)
                _check_record(workspaces[i], procs[i].returncode, err)
        pids = [int(t) for ws in workspaces if (p := ws / "pid.txt").is_file() and (t := p.read_text().strip())]
        assert all(wait_gone(pid) for pid in pids), "a command outlived its run"
        until(lambda: not _with_token(token), "every process of the commands to be gone", timeout_s=10)
    finally:
        for pid in _with_token(token):  # a failure must not leave `sleep 300`s behind
            os.kill(pid, signal.SIGKILL)
