"""The action with `auto-resume` (issue 46 item 2): the artifact holds every run of the chain, one directory each,
and the step summary's commands name the last; `run-dir` is the last run's. The composite action run step by step
(tests/fakes/actions.py) with the real agent-run and a scripted model server."""

from __future__ import annotations

import os
import re

from tests.fakes.actions import Runner
from tests.fakes.openai_server import error, reply
from tests.test_ci_action_job import checkout, venv


def test_the_artifact_holds_every_run_of_an_auto_resume_chain(tmp_path, fake, agent_run_zygote):
    ws, temp = tmp_path / "ws", tmp_path / "runner-temp"
    checkout(ws)
    temp.mkdir()
    venv(temp, agent_run_zygote)
    fake.add(error(500), error(500), reply("done"))  # the first run: its server down after one retry (exit 6)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENT_RUN_", "GITHUB_"))}
    env |= {"AGENT_RUN_MAX_RETRIES": "1", "AGENT_RUN_RETRY_BASE_S": "0.01"}
    runner = Runner(ws, temp, env, {"event_name": "push", "run_id": "4242", "run_attempt": "1",
                                    "repository": "octo/agent-run", "token": "ghs_job"})
    job = {"jobs": {"agent": {"steps": [{"id": "agent", "uses": "./", "with": {
        "task": "Say done.", "api-key": "sk-test", "base-url": fake.base_url, "sandbox": "off", "auto-resume": "1"}}]}}}
    [step] = runner.run_job(job, "agent")
    assert step.conclusion == "success", runner.log()
    first, last = sorted((ws / ".agent-run" / "runs").iterdir())
    assert step.outputs["run-dir"] == str(last) and step.outputs["status"] == "success"
    artifact = runner.artifacts / "agent-run-agent-4242-1"
    assert sorted(p.name for p in artifact.iterdir()) == [first.name, last.name], runner.log()
    assert (artifact / first.name / "events.jsonl").is_file() and (artifact / last.name / "summary.json").is_file()
    summary = (temp / "_files").glob("github_step_summary_*")
    shown = re.findall(r"agent-run runs show (\S+) --transcript", "".join(p.read_text() for p in summary))
    assert shown == [f".agent-run/runs/agent-run-agent-4242-1/{last.name}"]
