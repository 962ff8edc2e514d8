"""SIGHUP (a closed terminal, a dropped ssh session, a supervisor's stop) ends a run like SIGTERM: an
`interrupted` event naming it, `run_finished`, a summary with status interrupted and `signal: SIGHUP`, exit
129. Before, SIGHUP's default action killed the run with no record of its end."""

from __future__ import annotations

import json
import signal
import subprocess

from tests.conftest import agent_run_argv, clean_env
from tests.fakes.openai_server import hang, reply
from tests.fakes.wait import HANG_S, until
from tests.fakes.zygote import ZygotePopen


def start(zygote, fake, workspace, *args: str) -> subprocess.Popen[str]:
    """`agent-run ARGS` in the background, forked from the worker's zygote when there is one (a real
    process all the same: signals go straight to it)."""
    env = clean_env(OPENAI_BASE_URL=fake.base_url, OPENAI_API_KEY="sk-test")
    argv = [*agent_run_argv(), *args]
    kw = {"cwd": workspace, "env": env, "stdin": subprocess.DEVNULL, "stdout": subprocess.PIPE,
          "stderr": subprocess.PIPE, "text": True}
    if zygote is not None and zygote.serves(argv, env):
        return ZygotePopen(zygote, argv, **kw)
    return subprocess.Popen(argv, **kw)


def test_sighup_during_a_model_call_is_recorded_as_an_interrupt_exit_129(fake, workspace, agent_run_zygote):
    fake.add(hang(600), reply("too late"))  # answers only once the test is over: only the signal ends the run
    proc = start(agent_run_zygote, fake, workspace, "task.md")
    until(lambda: fake.requests, "the model request to reach the server")
    proc.send_signal(signal.SIGHUP)
    _, err = proc.communicate(timeout=HANG_S)
    assert proc.returncode == 129, err
    [run_dir] = (workspace / ".agent-run" / "runs").iterdir()
    summary = json.loads((run_dir / "summary.json").read_text())
    assert (summary["status"], summary["exit_code"], summary["signal"]) == ("interrupted", 129, "SIGHUP")
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    assert events[-2]["type"] == "interrupted"
    assert (events[-2]["signal"], events[-2]["during"]) == ("SIGHUP", "model_request")
    assert (events[-1]["type"], events[-1]["exit_code"], events[-1]["status"]) == ("run_finished", 129, "interrupted")
