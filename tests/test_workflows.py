"""action.yml and the workflows: schema-valid (check-jsonschema's vendored schemas, no network), and the
properties that matter at 3 a.m.: `exec agent-run`, the artifact upload that always runs, no `${{ }}`
inside a script, fail-on-denied."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML  # check-jsonschema's own YAML parser (YAML 1.2: `on` stays a string)

ROOT = Path(__file__).resolve().parents[1]
ACTION = ROOT / "action.yml"
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml")) + sorted(
    (ROOT / "examples" / "workflows").glob("*.yml"))


def load(path: Path) -> Any:
    return YAML(typ="safe", pure=True).load(path.read_text(encoding="utf-8"))


def check_jsonschema(schema: str, *files: Path) -> subprocess.CompletedProcess[str]:
    # A proxy that refuses everything: a schema fetched over the network would fail the test.
    env = {**os.environ, "HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9"}
    return subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema", schema, *map(str, files)],
                          capture_output=True, text=True, env=env, timeout=120)


def action_step(step_id: str | None = None, uses: str | None = None) -> dict[str, Any]:
    steps = load(ACTION)["runs"]["steps"]
    return next(s for s in steps if (step_id and s.get("id") == step_id) or (uses and s.get("uses", "")
                                                                              .startswith(uses)))


def test_the_expected_workflows_exist():
    names = {p.relative_to(ROOT).as_posix() for p in WORKFLOWS}
    assert {".github/workflows/ci.yml", "examples/workflows/pr-task.yml", "examples/workflows/nightly.yml",
            "examples/workflows/replay-denied.yml"} <= names


def test_action_is_valid():
    proc = check_jsonschema("vendor.github-actions", ACTION)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_workflows_are_valid():
    proc = check_jsonschema("vendor.github-workflows", *WORKFLOWS)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_validator_rejects_a_broken_workflow(tmp_path):
    bad = tmp_path / "bad.yml"
    bad.write_text("on: push\njobs:\n  x:\n    runs-on: ubuntu-latest\n    steps:\n      - run: a\n        uses: b\n")
    proc = check_jsonschema("vendor.github-workflows", bad)
    assert proc.returncode == 1, proc.stdout + proc.stderr


def test_action_inputs_and_outputs():
    action = load(ACTION)
    inputs = action["inputs"]
    assert {"task", "policy", "model", "api-key", "base-url", "max-turns", "timeout", "max-cost-usd", "junit",
            "upload-artifact", "fail-on-denied", "sandbox", "sandbox-fallback", "mcp-config",
            "output-schema"} <= set(inputs)
    assert "version" not in inputs  # agent-run is on no package index: the action installs its own checkout
    assert inputs["sandbox"]["default"] == "required" and inputs["sandbox-fallback"]["default"] == "true"
    assert inputs["policy"]["default"] == "default"
    assert inputs["upload-artifact"]["default"] == "true" and inputs["fail-on-denied"]["default"] == "true"
    assert {name: o["value"] for name, o in action["outputs"].items()} == {
        name: f"${{{{ steps.run.outputs.{name} }}}}"
        for name in ("status", "exit-code", "run-dir", "denials", "sandbox", "events-sha256", "output", "summary-json")}


def test_action_runs_agent_run_with_exec_and_uploads_always():
    run = action_step("run")
    assert "exec agent-run " in run["run"]
    assert run["run"].rstrip().splitlines()[-1].lstrip().startswith("exec agent-run")  # nothing after it
    assert run["continue-on-error"] is True
    upload = action_step(uses="actions/upload-artifact@v4")
    assert upload["if"].startswith("always()")
    assert upload["with"]["include-hidden-files"] is True
    assert upload["with"]["path"] == "${{ steps.run.outputs.run-dir }}"
    assert "github.run_attempt" in upload["with"]["name"] and "strategy.job-index" in upload["with"]["name"]
    python = action_step(uses="actions/setup-python@v5")
    assert python["with"]["python-version"] == "3.12"


# `pip install agent-run`, `pipx install --quiet agent-run[x]`, `agent-run==0.2.0`: the package by its name on
# an index, where it is not published. (`git+https://github.com/owner/agent-run@v0.2.0` is a git URL.)
INDEX_INSTALL = re.compile(r"\binstall\s+(?:-\S+\s+)*['\"]?agent[-_]run(?![\w/@.-])|\bagent[-_]run\s*[=~<>!]=")


def test_no_install_command_names_the_package_on_an_index():
    files = [ROOT / "README.md", ACTION, *WORKFLOWS, *sorted((ROOT / "docs").glob("*.md"))]
    found = [f"{p.relative_to(ROOT)}:{n}: {line.strip()}" for p in files
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if INDEX_INSTALL.search(line)]
    assert not found, "\n".join(found)
    assert INDEX_INSTALL.search("python -m pip install --quiet agent-run") and INDEX_INSTALL.search("agent-run==1.0")
    assert not INDEX_INSTALL.search('pip install "git+https://github.com/owner/agent-run@v0.2.0"')


def scripts(doc: Any) -> list[str]:
    if isinstance(doc, dict):
        return [v for k, v in doc.items() if k == "run" and isinstance(v, str)] + [
            s for v in doc.values() for s in scripts(v)]
    if isinstance(doc, list):
        return [s for v in doc for s in scripts(v)]
    return []


@pytest.mark.parametrize("path", [ACTION, *WORKFLOWS], ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_expression_inside_a_script(path):
    found = scripts(load(path))
    assert found
    assert not [s for s in found if "${{" in s]  # inputs and secrets reach scripts through env only


# -- the action's scripts, run for real with a stand-in agent-run ------------------------------------


FAKE_AGENT_RUN = """#!/bin/sh
echo "pid=$$"
echo "key=${OPENAI_API_KEY:-unset}"
for a in "$@"; do echo "arg=$a"; done
exit 3
"""


@pytest.fixture
def step_env(tmp_path):
    venv_bin = tmp_path / "venv" / "bin"
    venv_bin.mkdir(parents=True)
    fake = venv_bin / "agent-run"
    fake.write_text(FAKE_AGENT_RUN)
    fake.chmod(0o755)
    (tmp_path / "runner-temp").mkdir()
    (tmp_path / "ws").mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "INPUT_", "GITHUB_"))}
    env.update(VENV=str(tmp_path / "venv"), RUNNER_TEMP=str(tmp_path / "runner-temp"),
               GITHUB_OUTPUT=str(tmp_path / "output"), INPUT_POLICY="strict", INPUT_MODEL="", INPUT_API_KEY="",
               INPUT_BASE_URL="", INPUT_MAX_TURNS="", INPUT_TIMEOUT="", INPUT_MAX_COST_USD="", INPUT_JUNIT="")
    return env


def run_step(script: str, env: dict[str, str], cwd: Path, tmp: Path) -> tuple[subprocess.Popen[str], str]:
    # GitHub's `shell: bash` is `bash --noprofile --norc -eo pipefail {0}`, {0} a script file. (Not `-c`:
    # bash -c execs its last command by itself, which would hide a missing `exec`.)
    path = tmp / "step.sh"
    path.write_text(script)
    proc = subprocess.Popen(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(path)], env=env, cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out, _ = proc.communicate(timeout=30)
    return proc, out


def test_run_step_execs_agent_run_with_an_inline_task_as_data(step_env, tmp_path):
    task = "Fix the bug; don't run $(touch pwned) or `touch pwned2`.\nSecond line with \"quotes\"."
    env = step_env | {"INPUT_TASK": task, "INPUT_API_KEY": "sk-test-key", "INPUT_MAX_TURNS": "7"}
    proc, out = run_step(action_step("run")["run"], env, tmp_path / "ws", tmp_path)
    assert proc.returncode == 3, out  # agent-run's own exit code, untouched
    lines = out.splitlines()
    assert f"pid={proc.pid}" in lines  # exec: agent-run *is* the step's process, so it gets the runner's signals
    assert "key=sk-test-key" in lines
    args = [line.removeprefix("arg=") for line in lines if line.startswith("arg=")]
    assert args[:6] == ["--policy", "strict", "--sandbox", "required", "--max-turns", "7"]
    task_file = Path(args[-1])
    assert task_file.parent == tmp_path / "runner-temp"
    assert task_file.read_text() == task + "\n"
    assert not list((tmp_path / "ws").iterdir())  # nothing in the task text ran


def test_run_step_passes_an_existing_task_file_and_keeps_the_jobs_key(step_env, tmp_path):
    (tmp_path / "ws" / "task.md").write_text("do it\n")
    env = step_env | {"INPUT_TASK": "task.md", "OPENAI_API_KEY": "sk-from-job", "INPUT_JUNIT": "out.xml"}
    proc, out = run_step(action_step("run")["run"], env, tmp_path / "ws", tmp_path)
    assert proc.returncode == 3
    assert "key=sk-from-job" in out.splitlines()
    assert out.splitlines()[-3:] == ["arg=--junit", "arg=out.xml", "arg=task.md"]


def test_run_step_refuses_a_missing_task_file(step_env, tmp_path):
    proc, out = run_step(action_step("run")["run"], step_env | {"INPUT_TASK": "tasks/mistyped.md"}, tmp_path / "ws",
                        tmp_path)
    assert proc.returncode == 2
    assert "task file not found: tasks/mistyped.md" in out and "pid=" not in out
    assert "exit-code=2\n" in (tmp_path / "output").read_text()


@pytest.mark.parametrize(("code", "outcome", "fail_on_denied", "expected"), [
    ("0", "success", "true", 0),
    ("3", "failure", "true", 3),
    ("3", "failure", "false", 0),
    ("4", "failure", "false", 4),
    ("130", "failure", "true", 130),
    ("", "failure", "true", 1),  # agent-run wrote no outputs
    ("", "success", "true", 0),
])
def test_exit_status_step(code, outcome, fail_on_denied, expected, tmp_path):
    script = next(s for s in load(ACTION)["runs"]["steps"] if s.get("name") == "Exit status")["run"]
    env = {**os.environ, "EXIT_CODE": code, "OUTCOME": outcome, "FAIL_ON_DENIED": fail_on_denied}
    proc, _ = run_step(script, env, tmp_path, tmp_path)
    assert proc.returncode == expected


FAKE_CHECK = """#!/bin/sh
if [ "$1 $2" = "sandbox check" ]; then echo "sandbox: NOT ACTIVE"; exit "${CHECK_EXIT:-2}"; fi
exit 0
"""


@pytest.mark.parametrize(("check_exit", "fallback", "mode", "warned"), [
    ("0", "true", "required", False),  # the sandbox works: required stays required
    ("2", "true", "auto", True),  # it cannot be set up: run without it, with a warning annotation
    ("2", "false", "required", False),  # strict: agent-run itself will refuse (exit 2)
])
def test_sandbox_setup_step_falls_back_only_when_allowed(step_env, tmp_path, check_exit, fallback, mode, warned):
    fake = tmp_path / "venv" / "bin" / "agent-run"
    fake.write_text(FAKE_CHECK)
    env = step_env | {"INPUT_SANDBOX": "required", "FALLBACK": fallback, "CHECK_EXIT": check_exit,
                      "RUNNER_OS": "test"}  # not Linux: no install attempted on this machine
    proc, out = run_step(action_step("sandbox")["run"], env, tmp_path / "ws", tmp_path)
    assert proc.returncode == 0, out
    assert f"mode={mode}\n" in (tmp_path / "output").read_text()
    assert ("::warning title=agent-run: no sandbox::" in out) is warned
