"""action.yml and the workflows: schema-valid (check-jsonschema's vendored schemas, no network), and the
properties that matter at 3 a.m.: `exec agent-run`, the artifact upload that always runs, no `${{ }}`
inside a script, fail-on-denied."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML  # check-jsonschema's own YAML parser (YAML 1.2: `on` stays a string)

from tests.conftest import agent_run_argv
from tests.fakes.openai_server import reply
from tests.fakes.zygote_shim import install

ROOT = Path(__file__).resolve().parents[1]
# What every example workflow names agent-run by, as a user's repository would (docs/ci.md "Pinning agent-run"):
# itself a valid pin, so that the pin test, check-jsonschema and zizmor check the file the user gets.
PLACEHOLDER = "OWNER/agent-run@0000000000000000000000000000000000000000"
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
            "output-schema", "args"} <= set(inputs)
    assert "version" not in inputs  # agent-run is on no package index: the action installs its own checkout
    # `sandbox: required` means required: no silent fallback unless the workflow asks for one.
    assert inputs["sandbox"]["default"] == "required" and inputs["sandbox-fallback"]["default"] == "false"
    assert inputs["policy"]["default"] == "default"
    assert inputs["upload-artifact"]["default"] == "true" and inputs["fail-on-denied"]["default"] == "true"
    assert {name: o["value"] for name, o in action["outputs"].items()} == {
        name: f"${{{{ steps.run.outputs.{name} }}}}"
        for name in ("status", "exit-code", "run-dir", "run-dirs", "denials", "sandbox", "events-sha256", "output",
                     "commit", "branch", "pull-request-url", "summary-json")}


def test_action_runs_agent_run_with_exec_and_uploads_always():
    run = action_step("run")
    assert "exec agent-run " in run["run"]
    assert run["run"].rstrip().splitlines()[-1].lstrip().startswith("exec agent-run")  # nothing after it
    assert run["continue-on-error"] is True
    upload = action_step(uses="actions/upload-artifact@")
    assert upload["if"].startswith("always()")
    assert upload["with"]["include-hidden-files"] is True
    assert upload["with"]["path"] == "${{ steps.run.outputs.run-dirs }}"  # run-dir, or an auto-resume chain's
    assert "github.run_attempt" in upload["with"]["name"] and "strategy.job-index" in upload["with"]["name"]
    # The step summary names the artifact to fetch (issue 43, item 3): the upload's name, when there is an upload.
    name = upload["with"]["name"].removeprefix("${{ ").removesuffix(" }}")
    assert run["env"]["AGENT_RUN_ARTIFACT_NAME"] == f"${{{{ inputs.upload-artifact == 'true' && ({name}) || '' }}}}"
    python = action_step(uses="actions/setup-python@")
    assert python["with"]["python-version"] == "3.12"
    assert run["env"]["INPUT_ARGS"] == "${{ inputs.args }}"  # through env, never into the script text
    assert run["run"].rstrip().endswith('exec agent-run "${respond[@]}" "${args[@]}" "${extra[@]}" "${task[@]}" '
                                        '< "$stdin"')


# `pip install agent-run`, `pipx install --quiet agent-run[x]`, `agent-run==0.2.0`: the package by its name on
# an index, where it is not published. (`git+https://github.com/owner/agent-run@v0.2.0` is a git URL, and
# `"agent-run @ git+https://…"` names one.)
INDEX_INSTALL = re.compile(r"\binstall\s+(?:-\S+\s+)*['\"]?agent[-_]run(?![\w/@.-])(?!(?:\[[\w,]+\])?\s*@)"
                           r"|\bagent[-_]run\s*[=~<>!]=")


def test_no_install_command_names_the_package_on_an_index():
    files = [ROOT / "README.md", ACTION, *WORKFLOWS, *sorted((ROOT / "docs").glob("*.md"))]
    found = [f"{p.relative_to(ROOT)}:{n}: {line.strip()}" for p in files
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if INDEX_INSTALL.search(line)]
    assert not found, "\n".join(found)
    assert INDEX_INSTALL.search("python -m pip install --quiet agent-run") and INDEX_INSTALL.search("agent-run==1.0")
    assert not INDEX_INSTALL.search('pip install "git+https://github.com/owner/agent-run@v0.2.0"')
    assert not INDEX_INSTALL.search('pip install "agent-run @ git+https://github.com/OWNER/agent-run@0123abc"')


# -- reproducible: actions pinned by commit, dependencies by constraints.txt ----------------------------

USES = re.compile(r"^\s*(?:-\s+)?uses:\s*(?P<ref>\S+)(?P<comment>.*)$")
# owner/repo[/path]@<the commit of a release tag> # <that tag>
PINNED = re.compile(r"(?P<action>[\w.-]+/[\w.-]+)(?:/[\w./-]+)?@(?P<sha>[0-9a-f]{40}) # (?P<tag>v\d+(?:\.\d+)*)")


def uses_of(doc: Any) -> list[str]:
    if isinstance(doc, dict):
        return [v for k, v in doc.items() if k == "uses" and isinstance(v, str)] + [
            u for v in doc.values() for u in uses_of(v)]
    if isinstance(doc, list):
        return [u for v in doc for u in uses_of(v)]
    return []


def pinned_uses(path: Path) -> list[tuple[str, str]]:
    """(ref, the rest of the line) of every `uses:` line, after checking the lines are all of them."""
    found = [(m["ref"], m["comment"].strip()) for line in path.read_text(encoding="utf-8").splitlines()
             if (m := USES.match(line))]
    assert sorted(ref for ref, _ in found) == sorted(uses_of(load(path)))
    return found


@pytest.mark.parametrize("path", [ACTION, *WORKFLOWS], ids=lambda p: p.relative_to(ROOT).as_posix())
def test_third_party_actions_are_pinned_by_commit_sha_with_the_tag_as_a_comment(path):
    third_party = [(ref, comment) for ref, comment in pinned_uses(path) if not ref.startswith("./")]
    assert third_party
    bad = [f"{ref} {comment}" for ref, comment in third_party if not PINNED.fullmatch(f"{ref} {comment}")]
    assert not bad, "not `owner/action@<40 hex> # vX.Y.Z`: " + ", ".join(bad)


def test_each_action_is_pinned_to_one_commit_and_tag_everywhere():
    pins: dict[str, set[tuple[str, str]]] = {}
    for path in [ACTION, *WORKFLOWS]:
        for ref, comment in pinned_uses(path):
            if m := PINNED.fullmatch(f"{ref} {comment}"):
                pins.setdefault(m["action"], set()).add((m["sha"], m["tag"]))
    assert {"actions/checkout", "actions/setup-python", "actions/cache", "actions/upload-artifact",
            "actions/download-artifact", "dorny/test-reporter", "pypa/gh-action-pypi-publish"} <= set(pins)
    assert {action: len(p) for action, p in pins.items()} == dict.fromkeys(pins, 1), pins


def test_every_runtime_dependency_is_pinned_in_the_constraints_file():
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    pins = {}
    for line in (ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, version = line.partition("==")
            assert version and " " not in line, f"not name==version: {line!r}"
            pins[canonicalize_name(name)] = version
    for dependency in project["dependencies"]:
        req = Requirement(dependency)
        assert canonicalize_name(req.name) in pins, f"{req.name} is not pinned in constraints.txt"
        assert req.specifier.contains(pins[canonicalize_name(req.name)], prereleases=True), (
            f"constraints.txt pins {req.name}=={pins[canonicalize_name(req.name)]}, outside {req.specifier}")
    assert canonicalize_name(project["name"]) not in pins  # the action installs its own checkout


def test_the_action_installs_with_the_constraints_and_caches_the_venv():
    install = action_step("install")
    assert '-c "$ACTION_PATH/constraints.txt" "$ACTION_PATH"' in install["run"]
    restore = action_step("restore")
    assert restore["uses"].startswith("actions/cache/restore@")
    key = restore["with"]["key"]
    for part in ("runner.os", "runner.arch", "steps.python.outputs.python-version", "steps.key.outputs.ref",
                 "steps.key.outputs.constraints-sha256", "steps.key.outputs.sources-sha256"):
        assert "${{ " + part + " }}" in key
    assert restore["with"]["path"] == "${{ runner.temp }}/agent-run-venv" == install["env"]["VENV"]
    assert "restore-keys" not in restore["with"]  # a venv of other sources or pins is no venv to start from
    steps = load(ACTION)["runs"]["steps"]
    save = next(s for s in steps if s.get("uses", "").startswith("actions/cache/save@"))
    # Saved right after the install, before the agent runs: nothing a run does can reach the cache.
    assert steps.index(save) == steps.index(install) + 1
    assert save["if"] == "steps.install.outputs.save == 'true'"
    assert save["with"] == {"path": restore["with"]["path"], "key": "${{ steps.restore.outputs.cache-primary-key }}"}
    assert action_step("key")["env"] == {"ACTION_PATH": "${{ github.action_path }}",
                                         "ACTION_REF": "${{ github.action_ref }}"}


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
for a in "$@"; do if [ "$a" = - ]; then sed 's/^/stdin=/'; fi; done
exit 3
"""


@pytest.fixture
def step_env(tmp_path):
    venv_bin = tmp_path / "venv" / "bin"
    venv_bin.mkdir(parents=True)
    fake = venv_bin / "agent-run"
    fake.write_text(FAKE_AGENT_RUN)
    fake.chmod(0o755)
    (venv_bin / "python").symlink_to(sys.executable)  # the run step splits `args` with the venv's Python
    (tmp_path / "runner-temp").mkdir()
    (tmp_path / "ws").mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "INPUT_", "GITHUB_"))}
    env.update(VENV=str(tmp_path / "venv"), RUNNER_TEMP=str(tmp_path / "runner-temp"),
               GITHUB_OUTPUT=str(tmp_path / "output"), INPUT_POLICY="strict", INPUT_MODEL="", INPUT_API_KEY="",
               INPUT_BASE_URL="", INPUT_MAX_TURNS="", INPUT_TIMEOUT="", INPUT_MAX_COST_USD="", INPUT_JUNIT="",
               INPUT_ARGS="")
    return env


def run_step(script: str, env: dict[str, str], cwd: Path, tmp: Path,
             timeout: float = 30) -> tuple[subprocess.Popen[str], str]:
    # GitHub's `shell: bash` is `bash --noprofile --norc -eo pipefail {0}`, {0} a script file. (Not `-c`:
    # bash -c execs its last command by itself, which would hide a missing `exec`.)
    path = tmp / "step.sh"
    path.write_text(script)
    proc = subprocess.Popen(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(path)], env=env, cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out, _ = proc.communicate(timeout=timeout)
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
    assert args[-1] == "-"  # the text on stdin: untrusted, like a workspace file (a temp file would be trusted)
    assert [line.removeprefix("stdin=") for line in lines if line.startswith("stdin=")] == task.splitlines()
    assert not list((tmp_path / "ws").iterdir())  # nothing in the task text ran


def test_the_task_text_is_untrusted_by_the_real_agent_run(step_env, tmp_path, fake, agent_run_zygote):
    """Issue 25, item 6: task text is often `${{ github.event.issue.body }}`; its front matter must not pick
    the model, raise a budget or replace the policy. The run step, for real, with the real agent-run (forked from
    the zygote: tests/fakes/zygote_shim.py)."""
    stand_in = tmp_path / "venv" / "bin" / "agent-run"
    stand_in.unlink()
    install(agent_run_zygote, stand_in.parent, agent_run_argv()[0])
    task = "---\nmodel: expensive-model\nmax_turns: 500\npolicy: full-access\n---\nFix the bug."
    env = step_env | {"INPUT_TASK": task, "INPUT_POLICY": "default", "INPUT_SANDBOX": "auto",
                      "INPUT_API_KEY": "sk-test", "INPUT_BASE_URL": fake.base_url, "AGENT_RUN_RETRY_BASE_S": "0.01"}
    fake.add(reply("fixed"), reply("fixed"))  # "fixed" with no file changed is sent back once (--answer-nudges)
    proc, out = run_step(action_step("run")["run"], env, tmp_path / "ws", tmp_path, timeout=180)  # a hang only
    assert proc.returncode == 0, out
    [run_dir] = (tmp_path / "ws" / ".agent-run" / "runs").iterdir()
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    started = next(e for e in events if e["type"] == "run_started")
    assert (started["model"], started["max_turns"], started["policy"]) == ("gpt-4o-mini", 50, "default")
    assert fake.requests[0]["model"] == "gpt-4o-mini"
    assert [e["code"] for e in events if e["type"] == "warning"] == ["front_matter_ignored"]
    assert [e["reason"] for e in events if e["type"] == "answer_refused"] == ["claimed_change"]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["task_trusted"] is False and summary["task_file"] == "-"
    assert fake.requests[0]["messages"][1]["content"] == "Fix the bug.\n"


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


# -- the args input ---------------------------------------------------------------------------------


def passed_args(out: str) -> list[str]:
    return [line.removeprefix("arg=") for line in out.splitlines() if line.startswith("arg=")]


def test_args_are_shell_words_passed_through_as_data(step_env, tmp_path):
    (tmp_path / "ws" / "task.md").write_text("do it\n")
    args = """--approve 'bash:shell:npm test *'
      --instructions "docs/the rules.md" --max-tokens 5000
    --append-system-prompt 'no $(touch pwned) or `touch pwned2`; "quoted"' -v"""
    proc, out = run_step(action_step("run")["run"], step_env | {"INPUT_TASK": "task.md", "INPUT_ARGS": args},
                         tmp_path / "ws", tmp_path)
    assert proc.returncode == 3, out  # agent-run ran (the stand-in exits 3)
    assert passed_args(out)[4:] == [
        "--approve", "bash:shell:npm test *", "--instructions", "docs/the rules.md", "--max-tokens", "5000",
        "--append-system-prompt", 'no $(touch pwned) or `touch pwned2`; "quoted"', "-v", "task.md"]
    assert sorted(p.name for p in (tmp_path / "ws").iterdir()) == ["task.md"]  # nothing in args ran


def test_empty_args_add_nothing(step_env, tmp_path):
    (tmp_path / "ws" / "task.md").write_text("do it\n")
    proc, out = run_step(action_step("run")["run"], step_env | {"INPUT_TASK": "task.md", "INPUT_ARGS": " \n"},
                         tmp_path / "ws", tmp_path)
    assert proc.returncode == 3, out
    assert passed_args(out) == ["--policy", "strict", "--sandbox", "required", "task.md"]


OWNED = ["--policy", "--model", "--max-turns", "--timeout", "--max-cost-usd", "--mcp-config", "--output-schema",
         "--junit", "--sandbox", "--output-format", "--workspace", "--runs-dir"]


@pytest.mark.parametrize("form", ["separate", "equals"])
@pytest.mark.parametrize("option", OWNED)
def test_args_naming_an_option_the_action_owns_are_refused(step_env, tmp_path, option, form):
    named = f"{option} x" if form == "separate" else f"{option}=x"
    env = step_env | {"INPUT_TASK": "do it", "INPUT_ARGS": f"--approve 'bash:shell:ls'\n{named}"}
    proc, out = run_step(action_step("run")["run"], env, tmp_path / "ws", tmp_path)
    assert proc.returncode == 2, out
    assert "pid=" not in out  # agent-run never started
    error = next(line for line in out.splitlines() if line.startswith("::error title=agent-run: args refused::"))
    assert f"{option} (" in error
    assert "\nexit-code=2\n" in (tmp_path / "output").read_text()


def test_args_refusal_lists_every_owned_option_named(step_env, tmp_path):
    env = step_env | {"INPUT_TASK": "do it", "INPUT_ARGS": "--runs-dir=/tmp/x --model gpt-4o --approve x"}
    proc, out = run_step(action_step("run")["run"], env, tmp_path / "ws", tmp_path)
    assert proc.returncode == 2
    assert ("the args input names an option the action owns: --model (set the model input instead), --runs-dir "
            "(the action's own: its outputs and artifact rely on it)") in out


def test_args_that_are_not_shell_words_are_refused(step_env, tmp_path):
    env = step_env | {"INPUT_TASK": "do it", "INPUT_ARGS": "--approve 'bash:shell:ls"}
    proc, out = run_step(action_step("run")["run"], env, tmp_path / "ws", tmp_path)
    assert proc.returncode == 2 and "pid=" not in out
    assert "::error title=agent-run: args refused::the args input is not valid shell words: No closing quotation" \
        in out


# -- the venv: its cache key, the cached venv, the install -----------------------------------------------


def outputs(path: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text().splitlines())


@pytest.fixture
def action_dir(tmp_path) -> Path:
    """What the key step hashes of the action's checkout, and a file it does not."""
    root = tmp_path / "action"
    for name, text in {"pyproject.toml": "[project]\n", "README.md": "# x\n", "constraints.txt": "click==8.1\n",
                       "runner/__init__.py": "", "runner/cli/main.py": "x = 1\n", "policies/default.jsonc": "{}\n",
                       "docs/ci.md": "not installed\n"}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_key_step_hashes_the_constraints_and_the_sources(action_dir, tmp_path):
    script = action_step("key")["run"]

    def key(ref: str) -> dict[str, str]:
        out = tmp_path / "key-output"
        out.write_text("")
        env = {**os.environ, "ACTION_PATH": str(action_dir), "ACTION_REF": ref, "GITHUB_OUTPUT": str(out)}
        proc, log = run_step(script, env, tmp_path, tmp_path)
        assert proc.returncode == 0, log
        return outputs(out)

    first = key("")
    assert first["constraints-sha256"] == hashlib.sha256(b"click==8.1\n").hexdigest()
    assert first["ref"] == "local"  # `uses: ./`
    assert re.fullmatch(r"[0-9a-f]{64}", first["sources-sha256"])
    assert key("v0.2.0")["ref"] == "v0.2.0" and key("feature/x y")["ref"] == "feature_x_y"
    (action_dir / "docs" / "ci.md").write_text("changed, but not part of what is installed\n")
    (action_dir / "runner" / "__pycache__").mkdir()
    (action_dir / "runner" / "__pycache__" / "main.cpython-312.pyc").write_bytes(b"\0")
    assert key("") == first
    (action_dir / "runner" / "cli" / "main.py").write_text("x = 2\n")  # a moving ref: other sources, other key
    changed = key("")
    assert changed["sources-sha256"] != first["sources-sha256"]
    assert changed["constraints-sha256"] == first["constraints-sha256"]
    (action_dir / "constraints.txt").write_text("click==8.2\n")
    assert key("")["constraints-sha256"] != first["constraints-sha256"]


# `python -m venv DIR` makes a venv whose python records what pip was asked, then provides agent-run.
FAKE_SYSTEM_PYTHON = r"""#!/bin/sh
[ "$1 $2" = "-m venv" ] || exit 9
mkdir -p "$3/bin"
cat > "$3/bin/python" <<END
#!/bin/sh
printf '%s\n' "\$@" > "$3/pip-args"
printf '#!/bin/sh\necho "agent-run, version 9.9.9"\n' > "$3/bin/agent-run"
chmod +x "$3/bin/agent-run"
END
chmod +x "$3/bin/python"
"""


@pytest.fixture
def install_env(tmp_path, action_dir) -> dict[str, str]:
    python = tmp_path / "system-python"
    python.write_text(FAKE_SYSTEM_PYTHON)
    python.chmod(0o755)
    for name in ("output", "path"):
        (tmp_path / name).write_text("")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    return env | {"PYTHON": str(python), "ACTION_PATH": str(action_dir), "VENV": str(tmp_path / "venv"),
                  "BIN": str(tmp_path / "bin"), "GITHUB_OUTPUT": str(tmp_path / "output"),
                  "GITHUB_PATH": str(tmp_path / "path")}


@pytest.mark.parametrize("cache_hit", ["", "false", "true"])  # "true" with a venv that no longer runs
def test_install_step_installs_the_checkout_with_the_constraints(install_env, tmp_path, action_dir, cache_hit):
    if cache_hit == "true":
        (tmp_path / "venv" / "bin").mkdir(parents=True)  # restored, but its interpreter is gone
    proc, out = run_step(action_step("install")["run"], install_env | {"CACHE_HIT": cache_hit}, tmp_path, tmp_path)
    assert proc.returncode == 0, out
    assert (tmp_path / "venv" / "pip-args").read_text().splitlines() == [
        "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
        "-c", f"{action_dir}/constraints.txt", str(action_dir)]
    assert outputs(tmp_path / "output") == {"save": "true"}
    assert "agent-run, version 9.9.9" in out
    assert (tmp_path / "path").read_text() == f"{tmp_path / 'bin'}\n"
    assert os.listdir(tmp_path / "bin") == ["agent-run"]  # only agent-run: the job's python stays its own


def test_install_step_uses_a_cached_venv_as_it_is(install_env, tmp_path):
    venv_bin = tmp_path / "venv" / "bin"
    venv_bin.mkdir(parents=True)
    (venv_bin / "agent-run").write_text('#!/bin/sh\necho "agent-run, version 1.2.3"\n')
    (venv_bin / "agent-run").chmod(0o755)
    proc, out = run_step(action_step("install")["run"], install_env | {"CACHE_HIT": "true"}, tmp_path, tmp_path)
    assert proc.returncode == 0, out
    assert not (tmp_path / "venv" / "pip-args").exists()  # nothing installed
    assert outputs(tmp_path / "output") == {}  # and nothing to save
    later = subprocess.run(["agent-run", "--version"], capture_output=True, text=True, timeout=30,
                           env={**os.environ, "PATH": (tmp_path / "path").read_text().strip()})
    assert later.stdout == "agent-run, version 1.2.3\n"  # what a later step finds on PATH


def test_docs_ci_inputs_table_is_the_actions_inputs():
    text = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    table = text[text.index("### Inputs"):text.index("### Outputs")]
    documented = {m[1]: m[2].strip() for m in re.finditer(r"^\| `([\w-]+)` \|([^|]*)\|", table, re.M)}
    inputs = load(ACTION)["inputs"]
    assert {name: "(required)" if spec.get("required") else (f"`{spec['default']}`" if spec["default"] else "")
            for name, spec in inputs.items()} == documented
