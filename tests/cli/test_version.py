"""`agent-run --version`: the version pyproject.toml declares, answered before click (or importlib.metadata) is
imported, from the file the build writes; the installed metadata where that file is missing."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

from tests.conftest import agent_run_argv, clean_env

ROOT = Path(__file__).resolve().parents[2]
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]

LOADED = textwrap.dedent("""
    import sys
    from runner.cli.main import main
    try:
        main(["--version"])
    except SystemExit as e:
        assert e.code == 0, e.code
    print("LOADED=" + ",".join(m for m in ("click", "importlib.metadata") if m in sys.modules))
""")

FALLBACK = textwrap.dedent("""
    import sys
    sys.modules["runner.cli._version"] = None  # as if the build had not written it: importing it fails
    from runner.cli.version import version
    print("VERSION=" + version())
    print("METADATA=" + str("importlib.metadata" in sys.modules))
""")


def test_version_is_pyprojects(tmp_path):
    proc = subprocess.run([*agent_run_argv(), "--version"], cwd=tmp_path, env=clean_env(), capture_output=True,
                          text=True, timeout=60)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, f"agent-run, version {VERSION}\n", "")


def test_version_alone_imports_neither_click_nor_the_metadata(tmp_path):
    assert (ROOT / "runner" / "cli" / "_version.py").exists(), "written by the build: reinstall (pip install -e .)"
    proc = subprocess.run([sys.executable, "-c", LOADED], cwd=tmp_path, env=clean_env(), capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [f"agent-run, version {VERSION}", "LOADED="]


def test_the_version_file_is_git_ignored():
    # What the build writes there (the version) is checked in the wheel: tests/test_release.py.
    ignored = subprocess.run(["git", "check-ignore", "-q", "runner/cli/_version.py"], cwd=ROOT, timeout=30)
    assert ignored.returncode == 0


def test_without_the_file_the_installed_metadata_answers(tmp_path):
    proc = subprocess.run([sys.executable, "-c", FALLBACK], cwd=tmp_path, env=clean_env(), capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [f"VERSION={VERSION}", "METADATA=True"]


def test_version_beside_other_arguments_is_clicks(tmp_path):
    for args, code, out in ((["--version", "run"], 0, f"agent-run, version {VERSION}\n"),
                            (["--version", "--no-such-option"], 2, "")):
        proc = subprocess.run([*agent_run_argv(), *args], cwd=tmp_path, env=clean_env(), capture_output=True,
                              text=True, timeout=60)
        assert (proc.returncode, proc.stdout) == (code, out), (args, proc.stderr)
