""".github/workflows/release.yml: schema-valid offline, publishing guarded, and its build, `twine check` and
installed-wheel steps run here for real, on a copy of the working tree (one build for the whole module)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path
from typing import Any

import pytest

from tests.test_workflows import check_jsonschema, load

ROOT = Path(__file__).resolve().parents[1]
RELEASE = ROOT / ".github" / "workflows" / "release.yml"
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]


def step(job: str, step_id: str) -> dict[str, Any]:
    return next(s for s in load(RELEASE)["jobs"][job]["steps"] if s.get("id") == step_id)


def clean_environ() -> dict[str, str]:
    """The job's environment as a fresh runner has it: no CI variables, no model keys, and no PYTHONPATH (a
    suite run against another checkout must not put its code before the wheel's)."""
    return {k: v for k, v in os.environ.items()
            if not k.startswith(("GITHUB_", "OPENAI_", "AGENT_RUN_")) and k != "PYTHONPATH"}


def run_script(script: str, cwd: Path, tmp: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """A `run:` as GitHub runs it (`bash --noprofile --norc -eo pipefail FILE`), with this venv's `python`,
    `twine` and `agent-run` first on PATH as setup-python's would be."""
    path = tmp / f"step-{abs(hash(script))}.sh"
    path.write_text(script)
    full_env = clean_environ()
    full_env.update(PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}", **env)
    # Generous: only a hang should hit it (the build installs hatchling into an isolated env first).
    return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(path)], cwd=cwd, env=full_env,
                          capture_output=True, text=True, timeout=600)


# -- the file itself ----------------------------------------------------------------------------------


def test_release_workflow_is_valid():
    proc = check_jsonschema("vendor.github-workflows", RELEASE)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_release_triggers_and_permissions():
    wf = load(RELEASE)
    assert wf["on"] == {"release": {"types": ["published"]}, "workflow_dispatch": None}
    assert wf["permissions"] == {"contents": "read"}  # jobs ask for more, one by one
    jobs = wf["jobs"]
    assert jobs["attach"]["needs"] == "build" and jobs["pypi"]["needs"] == "build"
    assert jobs["attach"]["if"] == "github.event_name == 'release'"
    assert jobs["attach"]["permissions"] == {"contents": "write"}
    assert "gh release upload \"$TAG\" dist/*" in jobs["attach"]["steps"][-1]["run"]
    # Trusted publishing, and only once the project is registered (a repository variable says so).
    pypi = jobs["pypi"]
    assert pypi["if"] == "github.event_name == 'release' && vars.PYPI_PUBLISH == 'true'"
    assert pypi["permissions"] == {"id-token": "write"} and pypi["environment"] == "pypi"
    publish = pypi["steps"][-1]
    assert publish["uses"].startswith("pypa/gh-action-pypi-publish@") and "with" not in publish  # no token
    assert "id-token" not in str(jobs["build"]) and "id-token" not in str(jobs["attach"])


def test_the_installed_wheel_runs_readmes_quickstart():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    quickstart = readme[readme.index("## Quickstart"):]
    command = re.search(r"\.venv/bin/agent-run (.+)", quickstart)
    assert command, "README's Quickstart runs .venv/bin/agent-run"
    assert f'"$VENV/bin/agent-run" {command.group(1).strip()}' in step("build", "smoke")["run"]


# -- its steps, run ---------------------------------------------------------------------------------

IGNORE = shutil.ignore_patterns(".git", ".venv", "__pycache__", "*.pyc", ".*_cache", ".agent-run", "dist", "build")


@pytest.fixture(scope="module")
def checkout(tmp_path_factory) -> Path:
    """The working tree as a release's checkout would have it, built by the workflow's own steps."""
    tree = tmp_path_factory.mktemp("release") / "agent-run"
    shutil.copytree(ROOT, tree, ignore=IGNORE)
    for step_id in ("build", "check"):
        proc = run_script(step("build", step_id)["run"], tree, tree.parent)
        assert proc.returncode == 0, f"{step_id}: {proc.stdout}{proc.stderr}"
    return tree


@pytest.fixture(scope="module")
def wheel_venv(checkout) -> Path:
    """A fresh venv with the wheel installed, as the workflow's `install` step does, except that the
    dependencies come from this venv (a .pth) rather than the index: installing them would take longer
    than the rest of this module. agent-run itself, its metadata and its script are the wheel's."""
    venv = checkout.parent / "wheel-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    here = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    Path(site, "_dependencies.pth").write_text("".join(f"{p}\n" for p in sorted(here)))
    wheel = next((checkout / "dist").glob("*.whl"))
    # --ignore-installed: when this venv has agent-run installed as a package (CI's `pip install .`), the .pth
    # shows pip the same version, which it would then not install from the wheel.
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps",
                    "--ignore-installed", "--no-index", "--no-compile", str(wheel)], check=True, capture_output=True,
                   timeout=300)
    return venv


def test_build_makes_an_sdist_and_a_wheel_of_the_version_that_twine_accepts(checkout):
    assert sorted(p.name for p in (checkout / "dist").iterdir()) == [
        f"agent_run-{VERSION}-py3-none-any.whl", f"agent_run-{VERSION}.tar.gz"]
    with zipfile.ZipFile(next((checkout / "dist").glob("*.whl"))) as wheel:
        names = set(wheel.namelist())
        written = wheel.read("runner/cli/_version.py").decode()  # git-ignored, by the build: what --version reads
    assert "runner/cli/main.py" in names and "runner/_shipped_policies/strict.jsonc" in names
    assert f"__version__ = VERSION = {VERSION!r}" in written
    assert not any(n.startswith(("tests/", "bench/")) for n in names)


def test_the_wheel_in_a_fresh_venv_reports_its_version_and_runs_the_quickstart(checkout, wheel_venv):
    where = subprocess.run([str(wheel_venv / "bin" / "python"), "-c", "import runner; print(runner.__file__)"],
                           capture_output=True, text=True, check=True, cwd=checkout.parent, env=clean_environ()).stdout
    assert Path(where).is_relative_to(wheel_venv)  # the wheel's code, not this checkout's
    proc = run_script(step("build", "smoke")["run"], checkout, checkout.parent, VENV=str(wheel_venv),
                      TAG=f"v{VERSION}")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[0] == f"agent-run, version {VERSION}"
    assert "success (exit 0)" in proc.stderr
    assert (checkout / "examples" / "hello" / "REPORT.md").is_file()  # the Quickstart's run wrote its report


def test_a_release_tag_of_another_version_fails_before_anything_else(checkout, wheel_venv):
    proc = run_script(step("build", "smoke")["run"], checkout, checkout.parent, VENV=str(wheel_venv),
                      TAG="v99.0.0")
    assert proc.returncode == 1
    assert "::error title=release: wrong version::the tag is v99.0.0" in proc.stdout
    assert "success (exit 0)" not in proc.stderr
