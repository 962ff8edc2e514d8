"""A stand-in for a GitHub Actions runner, as far as this machine allows: one job of a workflow, its `run:` steps run
for real (`bash --noprofile --norc -eo pipefail FILE`, the runner's own command line, with its file commands:
GITHUB_OUTPUT, GITHUB_ENV, GITHUB_PATH, GITHUB_STEP_SUMMARY), its expressions evaluated (tests/fakes/actions_expr.py),
a composite action (`uses: ./`, or a name the test maps to a checkout) run step by step from its action.yml, and the
third-party actions the project uses simulated by what they leave behind: checkout (nothing: the test lays out the
workspace), setup-python (this interpreter), cache (a hit when the path exists), upload-artifact and
download-artifact (a directory per artifact under `artifacts/`), the reporters (their file must exist).

What it cannot do is said by raising: an expression or an action it does not know (`Unsupported`).
"""

from __future__ import annotations

import fnmatch
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from tests.fakes.actions_expr import Unsupported, evaluate, interpolate, text, truthy


def load(path: Path) -> Any:
    return YAML(typ="safe", pure=True).load(path.read_text(encoding="utf-8"))


def file_commands(raw: str) -> dict[str, str]:
    """`name=value` lines and `name<<DELIMITER` … `DELIMITER` blocks: GITHUB_OUTPUT and GITHUB_ENV as read."""
    out: dict[str, str] = {}
    lines = raw.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            end = lines.index(delimiter, i + 1)
            out[name] = "\n".join(lines[i + 1:end])
            i = end + 1
            continue
        if line:
            name, _, value = line.partition("=")
            out[name] = value
        i += 1
    return out


@dataclass
class Step:
    name: str
    outcome: str  # success | failure | skipped
    conclusion: str
    outputs: dict[str, str] = field(default_factory=dict)
    log: str = ""


@dataclass
class Runner:
    workspace: Path
    temp: Path  # RUNNER_TEMP
    env: dict[str, str]  # the runner's environment (PATH with the test's stand-ins first)
    github: dict[str, Any]  # the github context: event_name, event, run_id, token, repository, …
    secrets: dict[str, str] = field(default_factory=dict)
    actions: dict[str, Path] = field(default_factory=dict)  # a `uses:` value → the checkout of that action
    rewrite: Callable[[str], str] = lambda script: script  # what the test changes in a script (say so where used)
    artifacts: Path | None = None
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # the simulated actions, with their `with`
    steps: list[Step] = field(default_factory=list)  # every step run, composite steps too, in order
    _paths: list[str] = field(default_factory=list)
    _exported: dict[str, str] = field(default_factory=dict)
    _n: int = 0

    def __post_init__(self) -> None:
        self.artifacts = self.artifacts or self.temp.parent / "artifacts"
        self.artifacts.mkdir(parents=True, exist_ok=True)
        (self.temp / "_files").mkdir(parents=True, exist_ok=True)

    # -- a job -------------------------------------------------------------------------------------------------

    def run_job(self, workflow: Mapping[str, Any], job_id: str, matrix: Mapping[str, Any] | None = None,
                inputs: Mapping[str, Any] | None = None, index: int = 0, total: int = 1) -> list[Step]:
        """The job's steps, in order; [] when its `if:` is false."""
        job = workflow["jobs"][job_id]
        self.github = {**self.github, "job": job_id}
        ctx: dict[str, Any] = {"github": self.github, "secrets": self.secrets, "matrix": dict(matrix or {}),
                               "inputs": dict(inputs or {}), "strategy": {"job-index": index, "job-total": total},
                               "runner": {"temp": str(self.temp), "os": "Linux", "arch": "X64"}, "steps": {},
                               "env": {}}
        env = {k: text(interpolate(v, ctx)) for k, v in (workflow.get("env") or {}).items()}
        ctx["env"] = env = env | {k: text(interpolate(v, ctx)) for k, v in (job.get("env") or {}).items()}
        if "if" in job and not self._condition(job["if"], ctx, []):
            return []
        done: list[Step] = []
        for spec in job["steps"]:
            done.append(self._step(spec, ctx, env, done, action_path=None))
        return done

    def _condition(self, cond: Any, ctx: Mapping[str, Any], done: list[Step]) -> bool:
        failed = any(s.conclusion == "failure" for s in done)
        status = {"always": True, "success": not failed, "failure": failed, "cancelled": False}
        source = (cond if isinstance(cond, str) else text(cond)).strip()
        if source.startswith("${{") and source.endswith("}}"):
            source = source[3:-2]
        value = truthy(evaluate(source, ctx, status.__getitem__))
        # A condition that names no status function means `success() && (…)`.
        if re.search(r"\b(always|success|failure|cancelled)\s*\(", source) is None:
            return status["success"] and value
        return value

    def _step(self, spec: Mapping[str, Any], ctx: dict[str, Any], env: Mapping[str, str], done: list[Step],
              action_path: Path | None) -> Step:
        name = str(spec.get("name") or spec.get("id") or spec.get("uses") or "run")
        if not self._condition(spec.get("if", "success()"), ctx, done):
            step = Step(name, "skipped", "skipped")
        else:
            step_env = {**env, **{k: text(interpolate(v, ctx)) for k, v in (spec.get("env") or {}).items()}}
            if "run" in spec:
                step = self._script(name, spec["run"], step_env, action_path, spec.get("working-directory"))
            else:
                with_ = {k: interpolate(v, ctx) for k, v in (spec.get("with") or {}).items()}
                step = self._uses(name, str(spec["uses"]), with_, ctx, step_env)
            if step.outcome == "failure" and spec.get("continue-on-error") is True:
                step.conclusion = "success"
        if spec.get("id"):
            ctx["steps"][spec["id"]] = {"outputs": step.outputs, "outcome": step.outcome,
                                         "conclusion": step.conclusion}
        self.steps.append(step)
        return step

    # -- run: ---------------------------------------------------------------------------------------------------

    def _script(self, name: str, script: str, env: Mapping[str, str], action_path: Path | None,
                workdir: str | None) -> Step:
        self._n += 1
        files = {k: self.temp / "_files" / f"{k.lower()}_{self._n}" for k in
                 ("GITHUB_OUTPUT", "GITHUB_ENV", "GITHUB_PATH", "GITHUB_STEP_SUMMARY")}
        for f in files.values():
            f.write_text("")
        body = self.temp / "_files" / f"step_{self._n}.sh"
        body.write_text(self.rewrite(script))
        full = {**self.env, **self.defaults(), **self._exported, **env, **{k: str(v) for k, v in files.items()}}
        full["PATH"] = os.pathsep.join([*reversed(self._paths), self.env["PATH"]])
        if action_path is not None:
            full["GITHUB_ACTION_PATH"] = str(action_path)
        proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(body)], env=full,
                              cwd=self.workspace / (workdir or ""), stdin=subprocess.DEVNULL, capture_output=True,
                              text=True, timeout=300)
        self._exported |= file_commands(files["GITHUB_ENV"].read_text())
        self._paths += [p for p in files["GITHUB_PATH"].read_text().splitlines() if p]
        outcome = "success" if proc.returncode == 0 else "failure"
        return Step(name, outcome, outcome, file_commands(files["GITHUB_OUTPUT"].read_text()),
                    f"$ {name} (exit {proc.returncode})\n{proc.stdout}{proc.stderr}")

    def defaults(self) -> dict[str, str]:
        g = self.github
        return {"CI": "true", "GITHUB_ACTIONS": "true", "GITHUB_WORKSPACE": str(self.workspace),
                "RUNNER_TEMP": str(self.temp), "RUNNER_OS": "Linux", "RUNNER_ARCH": "X64",
                "GITHUB_EVENT_NAME": str(g.get("event_name", "")), "GITHUB_EVENT_PATH": str(g.get("event_path", "")),
                "GITHUB_RUN_ID": str(g.get("run_id", "")), "GITHUB_RUN_ATTEMPT": str(g.get("run_attempt", "1")),
                "GITHUB_JOB": str(g.get("job", "")), "GITHUB_REPOSITORY": str(g.get("repository", "")),
                "GITHUB_API_URL": str(g.get("api_url", "")), "GITHUB_SERVER_URL": str(g.get("server_url", "")),
                "GITHUB_ACTOR": str(g.get("actor", "")), "GITHUB_REF": str(g.get("ref", ""))}

    # -- uses: --------------------------------------------------------------------------------------------------

    def _uses(self, name: str, uses: str, with_: dict[str, Any], ctx: dict[str, Any], env: Mapping[str, str]) -> Step:
        if uses in self.actions or uses.startswith("./"):
            path = self.actions.get(uses) or (self.workspace / uses).resolve()
            return self._composite(name, path, with_, ctx, env)
        action = uses.split("@", 1)[0]
        self.calls.append((action, with_))
        simulated = SIMULATED.get(action)
        if simulated is None:
            raise Unsupported(f"no stand-in for the action {action}")
        outputs = simulated(self, {k: text(v) for k, v in with_.items()})
        return Step(name, "success", "success", outputs)

    def _composite(self, name: str, path: Path, with_: Mapping[str, Any], outer: Mapping[str, Any],
                   env: Mapping[str, str]) -> Step:
        spec = load(path / "action.yml")
        github = {**self.github, "action_path": str(path), "action_ref": ""}
        ctx: dict[str, Any] = {**outer, "github": github, "steps": {}, "inputs": {}}
        for key, decl in (spec.get("inputs") or {}).items():
            ctx["inputs"][key] = text(with_[key]) if key in with_ else text(interpolate(decl.get("default", ""), ctx))
        done: list[Step] = []
        for step in spec["runs"]["steps"]:
            done.append(self._step(step, ctx, env, done, action_path=path))
        outputs = {k: text(interpolate(o["value"], ctx)) for k, o in (spec.get("outputs") or {}).items()}
        outcome = "failure" if any(s.conclusion == "failure" for s in done) else "success"
        return Step(name, outcome, outcome, outputs, "\n".join(s.log for s in done))

    def log(self) -> str:
        return "\n".join(s.log or f"- {s.name}: {s.outcome}" for s in self.steps)


# -- the third-party actions, by what they leave --------------------------------------------------------------------

def _upload(r: Runner, w: Mapping[str, str]) -> dict[str, str]:
    paths = [p.strip() for p in w["path"].splitlines() if p.strip()]
    keep = [(r.workspace / p).resolve() for p in paths if not p.startswith("!")]
    drop = [(r.workspace / p[1:]).resolve() for p in paths if p.startswith("!")]
    existing = [p for p in keep if p.exists()]
    if not existing:
        if w.get("if-no-files-found", "warn") == "error":
            raise AssertionError(f"upload-artifact: no files at {paths}")
        return {}
    root = existing[0] if len(existing) == 1 and existing[0].is_dir() else Path(os.path.commonpath(existing))
    target = r.artifacts / w["name"]
    assert w.get("overwrite") == "true" or not target.exists(), f"artifact {w['name']} uploaded twice"
    shutil.rmtree(target, ignore_errors=True)
    for src in existing:
        files = src.rglob("*") if src.is_dir() else [src]
        for f in files:
            if f.is_file() and not any(f.is_relative_to(d) for d in drop):
                (target / f.relative_to(root)).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(f, target / f.relative_to(root))
    return {"artifact-id": "1"}


def _download(r: Runner, w: Mapping[str, str]) -> dict[str, str]:
    dest = r.workspace / w.get("path", ".")
    if w.get("name"):
        shutil.copytree(r.artifacts / w["name"], dest, dirs_exist_ok=True)
    else:
        for art in sorted(r.artifacts.iterdir()):
            if fnmatch.fnmatch(art.name, w.get("pattern", "*")):
                shutil.copytree(art, dest / art.name, dirs_exist_ok=True)
    return {"download-path": str(dest)}


def _needs_file(key: str) -> Callable[[Runner, Mapping[str, str]], dict[str, str]]:
    def check(r: Runner, w: Mapping[str, str]) -> dict[str, str]:
        assert (r.workspace / w[key]).exists(), f"{key} {w[key]} does not exist"
        return {}
    return check


SIMULATED: dict[str, Callable[[Runner, Mapping[str, str]], dict[str, str]]] = {
    "actions/checkout": lambda r, w: {},
    "actions/setup-python": lambda r, w: {"python-version": "3.12.0", "python-path": sys.executable},
    "actions/cache/restore": lambda r, w: {"cache-hit": "true" if Path(w["path"]).exists() else "",
                                           "cache-primary-key": w["key"]},
    "actions/cache/save": lambda r, w: {},
    "actions/upload-artifact": _upload,
    "actions/download-artifact": _download,
    "dorny/test-reporter": _needs_file("path"),
    "github/codeql-action/upload-sarif": _needs_file("sarif_file"),
}
