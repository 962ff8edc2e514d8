"""The workflow's input files (issue 26, item 4): the task file, --policy, --mcp-config, --output-schema,
--instructions are read only as regular files of bounded size (runner/core/inputfile.py). A FIFO (process
substitution is one) would block the run past --timeout; /dev/zero would be read until memory ran out."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.conftest import clean_env
from tests.fakes.openai_server import reply

HANG_S = 60  # a refusal takes well under a second; past this, the run was waiting on the FIFO

# Each input as a FIFO: the option (None: the TASK argument) and the label the refusal names.
FIFO_INPUTS = [(None, "task"), ("--policy", "--policy"), ("--mcp-config", "--mcp-config"),
               ("--output-schema", "--output-schema"), ("--instructions", "--instructions"),
               ("--env-file", "--env-file")]


def test_an_input_that_is_a_fifo_is_refused_at_once(fake, workspace, tmp_path, agent_run):
    """One test for the six (each a run of its own): each is exit 2 naming the option, with a run directory
    whose log and summary say why; the hang bound is --timeout + HANG_S, not a timing assertion."""
    fifo = tmp_path / "input.fifo"
    os.mkfifo(fifo)  # no writer: a blocking open or read waits for good
    for option, label in FIFO_INPUTS:
        args = [str(fifo)] if option is None else [option, str(fifo), "task.md"]
        r = agent_run("--timeout", "3", *args, timeout=HANG_S)
        assert r.code == 2, (label, r.stderr)
        assert f"{label}: {fifo} is not a regular file" in r.stderr and "<(" in r.stderr, r.stderr
        assert r.summary["status"] == "usage_error" and f"{label}: {fifo}" in r.summary["reason"]
        assert [e["type"] for e in r.events][-1] == "run_finished"
    assert not fake.requests


def test_a_task_over_its_cap_is_refused_unread(fake, workspace, agent_run):
    big = workspace / "big.md"
    with big.open("wb") as f:  # sparse: 2 MiB long, nothing written
        f.truncate(2 << 20)
    r = agent_run("big.md")
    assert r.code == 2 and "task: " in r.stderr and "over the 1 MiB limit" in r.stderr, r.stderr
    assert r.summary["status"] == "usage_error" and r.events[-1]["type"] == "run_finished" and not fake.requests


# The runner imported once, each case a forked child (a real process, the real CLI entry point): the peak RSS
# of the children is theirs alone, and the imports are paid once.
_PEAK = """
import json, os, resource, signal, sys, time
from runner.cli.main import main
codes = []
for argv, cwd in json.loads(sys.argv[1]):
    pid = os.fork()
    if pid == 0:
        # the old code read /dev/zero until memory ran out: keep the machine safe if it regresses
        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
        os.chdir(cwd)
        try:
            main(argv)
        except SystemExit as exc:
            os._exit(exc.code if isinstance(exc.code, int) else 1)
        os._exit(0)
    end = time.monotonic() + 60  # a hang bound
    while (done := os.waitpid(pid, os.WNOHANG))[0] == 0 and time.monotonic() < end:
        time.sleep(0.02)
    if done[0] == 0:
        os.kill(pid, signal.SIGKILL)
        done = os.waitpid(pid, 0)
    codes.append(os.waitstatus_to_exitcode(done[1]))
print(json.dumps({"codes": codes, "peak_kib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}))
"""


def test_a_character_device_as_task_or_policy_is_refused_in_bounded_memory(fake, workspace):
    """/dev/zero as the task and as --policy: exit 2, and the runner's peak RSS stays that of a run that read
    nothing (measured in a fresh process, so no other test's children count)."""
    env = clean_env(OPENAI_BASE_URL=fake.base_url, OPENAI_API_KEY="sk-test")
    cases = [(["/dev/zero"], str(workspace)), (["--policy", "/dev/zero", "task.md"], str(workspace))]
    out = subprocess.run([sys.executable, "-c", _PEAK, json.dumps(cases)], capture_output=True, text=True,
                         env=env, timeout=3 * HANG_S)
    got = json.loads(out.stdout)
    assert got["codes"] == [2, 2], out.stderr
    assert got["peak_kib"] < 300 * 1024, got  # a run's own footprint; the old code grew past 1 GB
    runs = sorted((workspace / ".agent-run" / "runs").iterdir())
    reasons = [json.loads((d / "summary.json").read_text())["reason"] for d in runs]
    assert reasons == ["task: /dev/zero is not a regular file (a character device); name a file (a pipe, process "
                       "substitution <(…) or a device is refused)",
                       "--policy: /dev/zero is not a regular file (a character device); name a file (a pipe, "
                       "process substitution <(…) or a device is refused)"]


def test_a_symlink_to_a_regular_file_is_followed(fake, workspace, tmp_path, agent_run):
    """Mounted config files are often links (a ConfigMap's ..data/): the task and the policy through one."""
    real = tmp_path / "real"
    real.mkdir()
    (real / "task.md").write_text("Say hi.\n")
    (real / "policy.jsonc").write_text('{ "extends": "strict" }\n')
    (tmp_path / "task-link.md").symlink_to(real / "task.md")
    (tmp_path / "policy-link.jsonc").symlink_to(real / "policy.jsonc")
    fake.add(reply("hi"))
    r = agent_run("--policy", str(tmp_path / "policy-link.jsonc"), str(tmp_path / "task-link.md"))
    assert r.code == 0, r.stderr
    assert r.stdout.strip() == "hi" and r.summary["status"] == "success"
    assert fake.requests[0]["messages"][1]["content"].strip() == "Say hi."

