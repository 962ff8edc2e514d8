"""Fixtures: a scripted OpenAI-compatible server on loopback, a temp workspace,
and `agent_run`, which drives the real `agent-run` executable in a subprocess."""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.event_schema import run_event_logs, validate_events_file
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.summary_schema import validate_summary_file
from tests.fakes.zygote import Zygote, ZygoteError, script_interpreter
from tests.fakes.zygote_shim import install


def pytest_configure(config: pytest.Config) -> None:
    # Hundreds of CLI subprocesses: with PYTHONDONTWRITEBYTECODE=1 (set on these machines) each one would
    # recompile every runner module. Bytecode goes to a private prefix, never into the checkout.
    if os.environ.pop("PYTHONDONTWRITEBYTECODE", None) is not None:
        prefix = os.path.join(tempfile.gettempdir(), f"agent-run-pyc-{os.getuid()}")
        os.environ.setdefault("PYTHONPYCACHEPREFIX", prefix)
    # A suite started in the background by a non-interactive shell (`cmd &`, nohup, some CI wrappers) inherits
    # SIGINT ignored, and so would every run it starts: the interrupt tests would test an ignored signal. A
    # handler here makes every child start with the default disposition (exec resets handled signals).
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


# README's test count stays true (issue 43, item 5): a run of the whole of tests/ fails when README's `~N tests` is
# more than 10 % off the tests collected (a plain run counts its own; under xdist, the controller a worker's).
README_COUNT = re.compile(r"~([\d,]+) tests")
_collected: list[int] = []


def readme_count_problem(readme: str, collected: int) -> str | None:
    """Why README's stated test count is wrong for `collected` tests, or None when it is within 10 %."""
    m = README_COUNT.search(readme)
    if m is None:
        return "README.md states no test count (`~N tests`)"
    stated = int(m[1].replace(",", ""))
    if abs(stated - collected) * 10 > collected:
        return (f"README.md says ~{stated:,} tests, {collected:,} were collected (more than 10 % apart): "
                "update its count (`pytest --collect-only -q -n 0`)")
    return None


def _whole_suite(config: pytest.Config) -> bool:
    args = {(config.invocation_params.dir / a.split("::")[0]).resolve() for a in config.args}
    narrowed = any(getattr(config.option, name, None) for name in ("keyword", "markexpr", "deselect", "lf",
                                                                    "stepwise"))
    return args == {Path(__file__).resolve().parent} and not narrowed


def pytest_collection_finish(session: pytest.Session) -> None:
    _collected.append(len(session.items))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node: Any, ids: list[str]) -> None:
    _collected.append(len(ids))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if hasattr(session.config, "workerinput") or not _collected or not _whole_suite(session.config):
        return
    readme = Path(__file__).resolve().parents[1] / "README.md"
    problem = readme_count_problem(readme.read_text(encoding="utf-8"), max(_collected))
    if problem is not None:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(f"conftest.py: {problem}", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def agent_run_argv() -> list[str]:
    exe = Path(sys.executable).parent / "agent-run"
    if exe.exists():
        return [str(exe)]
    found = shutil.which("agent-run")
    return [found] if found else [sys.executable, "-m", "runner"]


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENT_RUN_"))}
    env.update(extra)
    return env


@dataclass
class Result:
    code: int
    stdout: str
    stderr: str
    runs_dir: Path
    new_dirs: list[Path]  # run directories this invocation created

    @property
    def run_dir(self) -> Path:
        assert len(self.new_dirs) == 1, f"expected one new run directory, got {self.new_dirs}"
        return self.new_dirs[0]

    @property
    def events(self) -> list[dict[str, Any]]:
        lines = (self.run_dir / "events.jsonl").read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines]

    def of_type(self, type_: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["type"] == type_]

    @property
    def summary(self) -> dict[str, Any]:
        return json.loads((self.run_dir / "summary.json").read_text(encoding="utf-8"))


def _dirs(runs_dir: Path) -> set[Path]:
    return {p for p in runs_dir.iterdir() if p.is_dir()} if runs_dir.is_dir() else set()


@pytest.fixture(autouse=True)
def _valid_event_logs(request: pytest.FixtureRequest) -> Iterator[None]:
    """After every test that had a tmp_path (directly or through `workspace`): each run's
    events.jsonl under it matches runner/schemas/events.schema.json, line by line, and its summary.json
    matches runner/schemas/summary.schema.json."""
    if "tmp_path" not in request.fixturenames:
        yield
        return
    root: Path = request.getfixturevalue("tmp_path")
    yield
    golden = os.environ.get("AGENT_RUN_GOLDEN_DIR")
    for log in run_event_logs(root):
        validate_events_file(log)
        if (summary := log.with_name("summary.json")).is_file():
            validate_summary_file(summary)
        if golden:
            keep_golden(Path(golden), request.node.nodeid, root, log)


def keep_golden(golden: Path, nodeid: str, root: Path, log: Path) -> None:
    """A copy of a test's events.jsonl for bench/events_diff.py (a one-off check that a refactor changed no
    event): GOLDEN/<test id>/<path under tmp_path>, beside `_tmp` naming the tmp_path it ran under."""
    where = golden / re.sub(r"[^A-Za-z0-9_.\-]+", "_", nodeid)[:200]
    target = where / log.relative_to(root)
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(log, target)
    (where / "_tmp").write_text(str(root), encoding="utf-8")


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "task.md").write_text("Do the thing.\n", encoding="utf-8")
    return ws


# Why a zygote: each `agent-run` process spends about 1.3 s of CPU importing (the openai SDK, pydantic-settings,
# httpx, bs4, runner itself) before doing anything, and `agent_run` starts hundreds of them. So each pytest
# worker starts one fork server (tests/fakes/zygote.py) that has imported all of that, and `agent_run`'s
# invocations are forked from it: still one real OS process per invocation, running the real console script
# with the real argv, environment, cwd, stdin/stdout/stderr and exit status (subprocess.run's own code,
# timeouts included), talking real HTTP to the fake server. An environment that differs from the zygote's
# in what the interpreter reads at startup (PYTHON*, LANG, LC_*, TZ, ...) gets the real executable instead.
# AGENT_RUN_TEST_ZYGOTE=0 runs the real executable every time (the reference: the suite passes both ways).
# Tests that need the executable itself (import boundaries, signals, startup time) call subprocess directly.
# What agent-run starts of itself (a batch's tasks: the `agent-run` beside sys.executable) is forked too: the child's
# sys.executable is a `python` beside the zygote's stand-in agent-run (tests/fakes/zygote_shim.py), as a venv's is.
@pytest.fixture(scope="session")
def agent_run_zygote() -> Iterator[Zygote | None]:
    """This worker's fork server for `agent_run`, or None when AGENT_RUN_TEST_ZYGOTE=0."""
    argv = agent_run_argv()
    if os.environ.get("AGENT_RUN_TEST_ZYGOTE", "1") == "0" or len(argv) != 1 or script_interpreter(argv[0]) is None:
        yield None
        return
    try:
        zygote = Zygote.start(argv[0], clean_env())
    except ZygoteError as e:  # e.g. a dependency now reads the cwd on import: correct but slow, and said so
        warnings.warn(f"agent_run uses the real executable: {e}", stacklevel=1)
        yield None
        return
    yield zygote
    zygote.close()


@pytest.fixture
def agent_run(fake: FakeOpenAI, workspace: Path, agent_run_zygote: Zygote | None):
    """Run `agent-run ARGS` against the fake server, in the workspace; wait for it. The timeout only stops a
    hang: a run here takes a second or a few (a batch of several, more), several times that on a loaded machine."""

    def run(*args: str, env: dict[str, str] | None = None, input: str | None = None,
            timeout: float = 180, merged: bool = False) -> Result:
        """`merged`: stderr into stdout through one pipe, in the order written (as a CI job's log reads them)."""
        full_env = clean_env(**{"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "sk-test",
                                "AGENT_RUN_RETRY_BASE_S": "0.01", **(env or {})})
        runs_dir = workspace / ".agent-run" / "runs"
        before = _dirs(runs_dir)
        argv = [*agent_run_argv(), *args]
        start: Any = subprocess.run
        if agent_run_zygote is not None and agent_run_zygote.serves(argv, full_env):
            start = functools.partial(agent_run_zygote.run, interpreter=str(_self_stand_in(agent_run_zygote)))
        streams = {"stdout": subprocess.PIPE, "stderr": subprocess.STDOUT} if merged else {"capture_output": True}
        proc = start(argv, cwd=workspace, env=full_env, input=input or "", text=True, timeout=timeout, **streams)
        return Result(proc.returncode, proc.stdout, proc.stderr or "", runs_dir, sorted(_dirs(runs_dir) - before))

    return run


def _self_stand_in(zygote: Zygote) -> Path:
    """The `python` beside this zygote's stand-in agent-run (made on first use)."""
    python = Path(zygote.tmpdir) / "bin" / "python"
    if not python.exists():
        install(zygote, python.parent, zygote.script)
    return python


def pytest_sessionstart(session: pytest.Session) -> None:
    """The machine's tools, installed once before any worker starts (xdist's controller; a plain run
    itself): a test that expects a run without sandbox warnings must not race the sandbox tests' install."""
    import platform

    if hasattr(session.config, "workerinput"):
        return
    if platform.system() == "Linux" and shutil.which("bwrap") is None:
        apt_install("bubblewrap")
    if shutil.which("rg") is None:
        apt_install("ripgrep")


@pytest.fixture(scope="session")
def sandbox_available() -> None:
    """Sandbox tests run the real bubblewrap. On Linux they never skip: missing, it is installed
    here from Debian's package when we are root (as on CI and the development machines)."""
    import platform

    from runner.sandbox.probe import probe

    if platform.system() == "Linux" and shutil.which("bwrap") is None:
        apt_install("bubblewrap")
        probe.cache_clear()
    found = probe()
    if not found.available:
        if platform.system() != "Linux":
            pytest.skip(f"no sandbox mechanism on {platform.system()} yet")
        pytest.fail(f"the sandbox must work on this machine for these tests: {found.reason}")


@pytest.fixture(scope="session")
def ripgrep_installed() -> None:
    """grep's optional ripgrep path is tested too: installed from Debian's package when we are root."""
    if shutil.which("rg") is None:
        apt_install("ripgrep")


def apt_install(package: str) -> None:
    """Debian's package, when we are root with apt (CI and the development machines); else nothing."""
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        return
    quiet: dict[str, Any] = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "timeout": 600}
    install = ["apt-get", "-o", "DPkg::Lock::Timeout=120", "install", "-y", "-qq", package]  # xdist workers share it
    if subprocess.run(install, **quiet).returncode != 0:
        subprocess.run(["apt-get", "update", "-qq"], **quiet)
        subprocess.run(install, **quiet)
