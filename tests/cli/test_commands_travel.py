"""Printed commands travel (runner/record/commands.py): `agent-run` from PATH, paths relative to the workspace
root, every option that changes what a rerun does — and a command copied from one checkout's run
directory runs in another checkout."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
from pathlib import Path

from tests.conftest import agent_run_argv, clean_env
from tests.fakes.openai_server import reply
from tests.fakes.zygote import run as run_agent_run

SKILL = "---\nname: hello\ndescription: Say hello.\n---\nSay hello.\n"
PROFILE = "---\nname: helper\ndescription: Helps.\ntools: read\n---\nHelp.\n"


def _inputs(ws: Path) -> list[str]:
    """The workflow's inputs, inside the workspace, named by absolute paths as a CI step often does."""
    (ws / "ci").mkdir()
    (ws / "ci" / "mcp.json").write_text('{"mcpServers": {}}')
    (ws / "ci" / "answer.schema.json").write_text('{"type": "string"}')
    (ws / "ci" / "rules.md").write_text("Be brief.\n")
    (ws / "ci" / "skills" / "hello").mkdir(parents=True)
    (ws / "ci" / "skills" / "hello" / "SKILL.md").write_text(SKILL)
    (ws / "ci" / "agents").mkdir()
    (ws / "ci" / "agents" / "helper.md").write_text(PROFILE)
    ci = ws / "ci"
    return ["--mcp-config", str(ci / "mcp.json"), "--output-schema", str(ci / "answer.schema.json"),
            "--instructions", str(ci / "rules.md"), "--skills", str(ci / "skills"), "--agents", str(ci / "agents"),
            "--max-turns", "9", "--max-tokens", "50000", "--append-system-prompt", "Use British spelling.",
            "--policy", "default", str(ws / "task.md")]


def _printed(r, junit: Path, step_summary: Path) -> list[str]:
    s = r.summary
    d = s["denials"][0]
    next_line = next(line for line in r.stderr.splitlines() if line.startswith("agent-run: next: "))
    # The commands inside the JUnit report and the step summary (their other text may name the run dir).
    inside = [m.group(0) for text in (junit.read_text(), step_summary.read_text())
              for m in re.finditer(r"agent-run (?:replay|resume|fork|runs|--)[^\n<`|]*", text)]
    assert len(inside) >= 4
    return [d["replay"], d["rerun"], s["replay"], s["resume"], s["show"], next_line[len("agent-run: next: "):],
            *inside]


def test_every_printed_command_is_relative_to_the_workspace_and_complete(fake, workspace, agent_run, tmp_path):
    fake.add(reply(calls=[("bash", {"command": "echo hi > out.txt"})]), reply('"needs approval"'))
    junit, steps = tmp_path / "junit.xml", tmp_path / "steps.md"
    github = {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(steps), "GITHUB_OUTPUT": str(tmp_path / "o")}
    r = agent_run("--junit", str(junit), *_inputs(workspace), env=github)
    assert r.code == 3, r.stderr
    for text in _printed(r, junit, steps):
        assert str(workspace) not in text and str(Path.home()) not in text, text
        assert "/bin/python" not in text and ".venv" not in text, text
    rerun = shlex.split(r.summary["denials"][0]["rerun"])
    assert rerun[0] == "agent-run" and rerun[-1] == "task.md"
    pairs = dict(zip(rerun[1:-1:2], rerun[2:-1:2], strict=False))
    assert pairs["--mcp-config"] == "ci/mcp.json" and pairs["--output-schema"] == "ci/answer.schema.json"
    assert pairs["--instructions"] == "ci/rules.md" and pairs["--skills"] == "ci/skills"
    assert pairs["--agents"] == "ci/agents" and pairs["--max-turns"] == "9" and pairs["--max-tokens"] == "50000"
    assert pairs["--append-system-prompt"] == "Use British spelling." and pairs["--policy"] == "default"
    assert pairs["--approve"] == "bash:shell:echo hi"
    assert "run from the workspace root" in steps.read_text()


def test_a_copied_command_runs_in_another_checkout(fake, workspace, agent_run, tmp_path, agent_run_zygote):
    """The CI machine's run directory, downloaded into a laptop's checkout (another path): the printed
    replay and rerun commands run there as printed, from the checkout's root."""
    fake.add(reply(calls=[("bash", {"command": "echo hi > out.txt"})]), reply('"needs approval"'))
    first = agent_run(*_inputs(workspace))
    assert first.code == 3, first.stderr
    laptop = tmp_path / "laptop" / "checkout"
    shutil.copytree(workspace, laptop)
    env = clean_env(OPENAI_BASE_URL=fake.base_url, OPENAI_API_KEY="sk-test")

    def run(printed: str) -> subprocess.CompletedProcess[str]:
        argv = shlex.split(printed)
        assert argv[0] == "agent-run"
        return run_agent_run(agent_run_zygote, [*agent_run_argv(), *argv[1:]], cwd=laptop, env=env,
                             capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=300)

    replayed = run(first.summary["denials"][0]["replay"])
    assert replayed.returncode == 0, replayed.stderr
    assert (laptop / "out.txt").read_text() == "hi\n" and not (workspace / "out.txt").exists()
    (laptop / "out.txt").unlink()
    fake.add(reply(calls=[("bash", {"command": "echo hi > out.txt"})]), reply('"done"'))
    rerun = run(first.summary["denials"][0]["rerun"])
    assert rerun.returncode == 0, rerun.stderr  # approved this time, and its answer fits the schema
    assert (laptop / "out.txt").read_text() == "hi\n"
    log = sorted((laptop / ".agent-run" / "runs").glob("*/events.jsonl"))[-1]
    started = next(json.loads(line) for line in log.read_text().splitlines() if '"run_started"' in line)
    assert {i["source"] for i in started["instructions"]} >= {"--instructions", "--output-schema", "skills"}


def test_a_run_that_never_started_prints_no_resume(fake, workspace, agent_run):
    """A usage error (a policy that does not exist) left a run directory but no conversation: its summary
    offers `show`, not a `resume` that could only fail."""
    r = agent_run("--policy", "no-such-policy", "task.md")
    assert r.code == 2
    assert "resume" not in r.summary and r.summary["show"].startswith("agent-run runs show .agent-run/runs/")


def test_a_runs_dir_beside_the_workspace_is_named_relative_in_every_printed_command(fake, workspace, agent_run,
                                                                                      tmp_path):
    """`--runs-dir ../runs`: the `next:` hint and the summary's commands named /tmp/…/runs/ID (issue 27, item 6);
    they are run from the workspace root, so `../runs/ID`."""
    fake.add(reply(calls=[("bash", {"command": "make"})]), reply("stopped"))
    r = agent_run("--policy", "strict", "--runs-dir", "../runs", "task.md", env={"AGENT_RUN_SANDBOX": "off"})
    assert r.code == 3, r.stderr
    run_dir = next((tmp_path / "runs").iterdir())
    ref = f"../runs/{run_dir.name}"
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["replay"] == f"agent-run replay {ref} --approve" and summary["resume"] == f"agent-run resume {ref}"
    assert summary["denials"][0]["replay"].startswith(f"agent-run replay {ref} --call ")
    hint = next(line for line in r.stderr.splitlines() if line.startswith("agent-run: next: "))
    assert hint.startswith(f"agent-run: next: agent-run replay {ref} --call ") and str(tmp_path) not in hint


def test_a_printed_resume_runs_in_a_moved_checkout(fake, workspace, agent_run, tmp_path, agent_run_zygote):
    """Input files inside the workspace named by absolute paths are recorded relative to it (issue 42, item 10):
    the checkout moved, the printed resume finds its --output-schema (and the rest) where the checkout is now. The
    trusted directories a run directory cannot grant (--skills, --agents) are in the printed resume, as the
    person gave them to the run (relative to the root): the skills' index checks and the profiles are offered."""
    fake.add(reply('"first"'))
    steps = tmp_path / "steps.md"
    first = agent_run(*_inputs(workspace), env={"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(steps),
                                                "AGENT_RUN_ARTIFACT_NAME": "the-run"})
    assert first.code == 0, first.stderr
    started = next(json.loads(line) for line in (first.run_dir / "events.jsonl").read_text().splitlines()
                   if '"run_started"' in line)
    paths = {i["source"]: i["path"] for i in started["instructions"] if i["path"] and i["source"].startswith("--")}
    assert paths == {"--output-schema": "ci/answer.schema.json", "--instructions": "ci/rules.md"}
    argv = shlex.split(first.summary["resume"])
    assert argv[2:] == [f".agent-run/runs/{first.run_dir.name}", "--skills", "ci/skills", "--agents", "ci/agents"]
    assert "agent-run resume .agent-run/runs/the-run --skills ci/skills --agents ci/agents\n" in steps.read_text()
    moved = tmp_path / "moved" / "checkout"
    moved.parent.mkdir()
    shutil.move(workspace, moved)
    fake.add(reply('"second"'))
    assert argv[0] == "agent-run"
    resumed = run_agent_run(agent_run_zygote, [*agent_run_argv(), *argv[1:], "go on"], cwd=moved,
                            stdin=subprocess.DEVNULL, env=clean_env(OPENAI_BASE_URL=fake.base_url,
                                                                    OPENAI_API_KEY="sk-test"),
                            capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.strip() == '"second"'
