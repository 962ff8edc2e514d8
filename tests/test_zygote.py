"""The test zygote (tests/fakes/zygote.py): a forked child is indistinguishable from the executable run afresh.

A probe script reports what a process can see of itself (argv, environment, cwd, stdin, stdio streams, signal
dispositions, sys.path, __main__, ...); each case runs it both ways, with subprocess.run and from a zygote, and
compares everything but what must differ (pids, random numbers)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import agent_run_argv, clean_env
from tests.fakes.openai_server import hang
from tests.fakes.procs import wait_gone
from tests.fakes.zygote import Zygote, script_interpreter

PROBE = textwrap.dedent("""
    import atexit, json, os, random, signal, sys, tempfile, threading, time

    def stream(s):
        raw = getattr(s.buffer, "raw", s.buffer)
        return [s.encoding, s.errors, s.line_buffering, s.write_through, s.mode, s.name, type(s.buffer).__name__,
                raw.name, raw.closefd, s.fileno()]

    def state():
        main = sys.modules["__main__"]
        return {
            "argv": sys.argv, "orig_argv": sys.orig_argv, "executable": sys.executable, "path": sys.path,
            "env": dict(os.environ), "cwd": os.getcwd(), "stdin": sys.stdin.read(),
            "stdio": [stream(s) for s in (sys.stdin, sys.stdout, sys.stderr)],
            "dunder_stdio": [sys.__stdin__ is sys.stdin, sys.__stdout__ is sys.stdout, sys.__stderr__ is sys.stderr],
            "signals": {s.name: repr(signal.getsignal(s)) for s in signal.Signals},
            "mask": sorted(signal.pthread_sigmask(signal.SIG_BLOCK, [])),
            "main": [main.__name__, main.__file__, type(main.__loader__).__name__, main.__spec__, main.__package__],
            "pgrp": os.getpgrp(), "sid": os.getsid(0), "fds": sorted(os.listdir("/proc/self/fd")),
            "flags": repr(sys.flags), "tempdir": tempfile.gettempdir(), "threads": threading.active_count(),
            "mp_dir": __import__("multiprocessing.process").process.ORIGINAL_DIR,  # read on import
        }

    what = sys.argv[1]
    if what == "state":
        print(json.dumps(state()))
    elif what == "random":
        print(random.random(), os.urandom(8).hex())
    elif what == "exit":
        sys.exit(int(sys.argv[2]) if sys.argv[2].lstrip("-").isdigit() else sys.argv[2])
    elif what == "return":
        pass
    elif what == "raise":
        try:
            {}["inner"]
        except KeyError as e:
            raise RuntimeError("probe failed") from e
    elif what == "interrupt":
        raise KeyboardInterrupt
    elif what == "signal":
        os.kill(os.getpid(), getattr(signal, sys.argv[2]))
        time.sleep(5)
    elif what == "sleep":
        print(os.getpid(), flush=True)
        time.sleep(600)
    elif what == "shutdown":
        atexit.register(lambda: print("atexit ran", flush=True))
        written = threading.Event()  # the thread prints after the main thread's write, whatever the load
        threading.Thread(target=lambda: (written.wait(), time.sleep(0.3), print("thread joined"))).start()
        sys.stdout.write("no newline, never flushed")
        written.set()
        sys.exit(3)
""")


@pytest.fixture(scope="module")
def probe(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Zygote]]:
    interpreter = script_interpreter(agent_run_argv()[0])
    if interpreter is None:
        pytest.skip("agent-run is not a Python console script here")
    script = tmp_path_factory.mktemp("probe") / "probe"
    script.write_text(f"#!{interpreter}\n{PROBE}", encoding="utf-8")
    script.chmod(0o755)
    zygote = Zygote.start(script, clean_env(), modules=["json", "random", "multiprocessing.process"])
    yield str(script), zygote
    zygote.close()


def both(probe: tuple[str, Zygote], *args: str, **kwargs: object) -> tuple[subprocess.CompletedProcess[str], ...]:
    script, zygote = probe
    argv = [script, *args]
    kwargs = {"capture_output": True, "text": True, "timeout": 30, "env": clean_env(), **kwargs}
    assert zygote.serves(argv, kwargs["env"])  # type: ignore[arg-type]
    return subprocess.run(argv, **kwargs), zygote.run(argv, **kwargs)  # type: ignore[call-overload]


def test_the_child_sees_argv_env_cwd_stdin_and_a_fresh_interpreter(probe, tmp_path):
    env = clean_env(PROBE_VAR="value with spaces ✓", PYTHONIOENCODING="latin-1:replace")
    env.pop("PYTHONUNBUFFERED", None)
    for kwargs in ({}, {"env": env, "cwd": tmp_path, "input": "line one\r\nline two ✓\n"}):
        real, forked = both(probe, "state", "--flag", "ünïcode arg", "", **kwargs)
        assert (forked.returncode, forked.stderr) == (real.returncode, real.stderr) == (0, "")
        seen, expected = json.loads(forked.stdout), json.loads(real.stdout)
        assert seen == expected
    assert seen["argv"] == [probe[0], "state", "--flag", "ünïcode arg", ""]
    assert seen["env"] == env
    assert seen["cwd"] == str(tmp_path)
    assert seen["stdin"] == "line one\r\nline two ✓\n".encode().decode("latin-1")  # as PYTHONIOENCODING says
    assert seen["stdio"][1][:2] == ["iso8859-1", "replace"]
    assert seen["signals"]["SIGINT"] == repr(signal.default_int_handler)
    assert seen["pgrp"] == os.getpgrp()  # as subprocess.run: the caller's process group, not one of its own


def test_a_child_given_an_interpreter_has_it_as_sys_executable(probe, tmp_path):
    # As a console script whose `#!` names a venv's bin/python (a link to this interpreter) has it: what the script
    # starts beside sys.executable (a batch's tasks: bin/agent-run) is found there.
    script, zygote = probe
    link = tmp_path / "bin" / "python"
    link.parent.mkdir()
    link.symlink_to(sys.executable)
    plain, given = (json.loads(zygote.run([script, "state"], capture_output=True, text=True, env=clean_env(),
                                          **kwargs).stdout) for kwargs in ({}, {"interpreter": str(link)}))
    assert (given["executable"], given["orig_argv"][0]) == (str(link), str(link))
    assert {k: v for k, v in given.items() if k not in ("executable", "orig_argv")} == {
        k: v for k, v in plain.items() if k not in ("executable", "orig_argv")}


def test_each_child_is_its_own_process_with_its_own_randomness(probe):
    script, zygote = probe
    outputs = [zygote.run([script, "random"], capture_output=True, text=True, env=clean_env()).stdout
               for _ in range(3)]
    assert len(set(outputs)) == 3


@pytest.mark.parametrize("args", [["return"], ["exit", "0"], ["exit", "7"], ["exit", "-1"], ["exit", "300"],
                                  ["exit", "a message"], ["raise"], ["interrupt"], ["signal", "SIGTERM"],
                                  ["signal", "SIGKILL"], ["signal", "SIGINT"], ["shutdown"]])
def test_exit_statuses_messages_and_signals_propagate(probe, args):
    real, forked = both(probe, *args)
    assert (forked.returncode, forked.stdout, forked.stderr) == (real.returncode, real.stdout, real.stderr)
    expected = {"return": 0, "exit": None, "raise": 1, "interrupt": -signal.SIGINT, "shutdown": 3}.get(args[0])
    if expected is not None:
        assert forked.returncode == expected
    if args[0] == "signal":
        assert forked.returncode == -getattr(signal, args[1])
    if args[0] == "raise":
        assert "RuntimeError: probe failed" in forked.stderr and "zygote" not in forked.stderr
    if args[0] == "shutdown":
        assert forked.stdout == "no newline, never flushedthread joined\natexit ran\n"


def test_a_timeout_kills_the_child(probe):
    script, zygote = probe
    # The child must print its pid before the timeout kills it: a longer timeout only when a loaded machine
    # did not get that far (its sleep outlasts them all).
    for timeout in (1, 5, 25):
        with pytest.raises(subprocess.TimeoutExpired) as caught:
            zygote.run([script, "sleep"], capture_output=True, text=True, env=clean_env(), timeout=timeout)
        if caught.value.stdout:
            break
    pid = int(caught.value.stdout.split()[0])
    assert wait_gone(pid)
    # The zygote outlives its children's deaths.
    assert zygote.run([script, "exit", "5"], env=clean_env()).returncode == 5


def test_a_missing_cwd_fails_as_subprocess_does(probe, tmp_path):
    script, zygote = probe
    with pytest.raises(FileNotFoundError) as real:
        subprocess.run([script, "return"], cwd=tmp_path / "missing")
    with pytest.raises(FileNotFoundError) as forked:
        zygote.run([script, "return"], cwd=tmp_path / "missing")
    assert (forked.value.errno, forked.value.filename) == (real.value.errno, real.value.filename)


def test_environments_the_interpreter_reads_at_startup_go_to_the_real_executable(probe):
    script, zygote = probe
    assert zygote.serves([script], clean_env(PROBE_VAR="x", PYTHONUNBUFFERED="", PYTHONIOENCODING="utf-8"))
    for name, value in (("PYTHONHASHSEED", "0"), ("PYTHONUTF8", "1"), ("LC_ALL", "C"), ("TZ", "Asia/Tokyo")):
        assert not zygote.serves([script], clean_env(**{name: value})), name
    assert not zygote.serves([sys.executable, script], clean_env())


def test_the_zygote_exits_with_the_process_that_started_it(probe):
    script, _ = probe
    starter = textwrap.dedent(f"""
        import os, sys
        sys.path.insert(0, {str(Path(__file__).parent.parent)!r})
        from tests.fakes.zygote import Zygote
        zygote = Zygote.start({script!r}, dict(os.environ), modules=[])
        print(zygote.proc.pid, flush=True)
        os._exit(0)
    """)
    done = subprocess.run([sys.executable, "-c", starter], env=clean_env(), capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert wait_gone(int(done.stdout))


def test_agent_run_goes_through_the_zygote_and_matches_the_executable(agent_run_zygote, agent_run, fake, workspace):
    argv = agent_run_argv()
    env = clean_env(OPENAI_BASE_URL=fake.base_url, OPENAI_API_KEY="sk-test", AGENT_RUN_RETRY_BASE_S="0.01")
    if os.environ.get("AGENT_RUN_TEST_ZYGOTE") == "0":
        assert agent_run_zygote is None
    else:
        assert agent_run_zygote is not None and agent_run_zygote.serves(argv, env)
    for args in (["--version"], ["--help"], ["--no-such-option"], ["policy", "explain", "bash", "rm -rf /"]):
        real = subprocess.run([*argv, *args], cwd=workspace, env=env, input="", capture_output=True, text=True,
                              timeout=60)
        got = agent_run(*args)
        assert (got.code, got.stdout, got.stderr) == (real.returncode, real.stdout, real.stderr), args
    missing = agent_run("no-such-task.md")
    assert missing.code == 2 and "cannot read task no-such-task.md" in missing.stderr


def test_agent_run_reads_stdin_and_a_timeout_kills_it(agent_run, fake, workspace):
    # The run must reach its model request (which never gets an answer) before the timeout kills it: a longer
    # timeout only when a loaded machine did not get that far.
    for timeout in (4, 16, 64):
        fake.add(hang(600))
        with pytest.raises(subprocess.TimeoutExpired):
            agent_run("-", input="Do the thing from stdin.\n", timeout=timeout)
        if fake.requests:
            break
    assert "Do the thing from stdin." in json.dumps(fake.requests[0])
    holders = [json.loads(p.read_text()) for p in (workspace / ".agent-run").rglob("*") if p.is_file()
               and p.stat().st_size < 1000 and '"boot_id"' in p.read_text(errors="replace")]
    assert holders and all(wait_gone(h["pid"]) for h in holders)
