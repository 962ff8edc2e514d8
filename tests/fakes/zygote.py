"""A fork server ("zygote") for the test suite's `agent-run` invocations.

Every invocation of the real CLI pays about 1.3 s of CPU importing (the openai SDK, pydantic-settings,
httpx, bs4, runner itself) before it does anything; the suite runs it hundreds of times. The zygote is
a Python process, started once per pytest worker, that has already imported all of that. Each
invocation is still a separate OS process running the real entry-point script with the real argv,
environment, cwd and stdio file descriptors, and its exit status is reported the way `subprocess`
reports it -- but it is forked from the zygote instead of started from scratch.

Server (`python3 zygote_server.py SOCKET SCRIPT`, with the interpreter named in SCRIPT's `#!` line, the one
the real executable runs on): imports every runner module, then serves on a Unix socket. A request
is (argv, env, cwd) plus three file descriptors for stdin, stdout and stderr (SCM_RIGHTS). The zygote
forks; the child makes itself look like a freshly started `python3 SCRIPT ARGS...` (stdio, signal
dispositions, environment, sys.argv, sys.path[0], `__main__`), tells the client its pid, runs the
script, and exits through the interpreter's own shutdown (threads joined, atexit, stream flush). When
the child exits, the zygote sends its wait status. The zygote exits when its stdin (a pipe from the
pytest worker) reaches end-of-file, i.e. when the worker exits or closes it.

Client: `Zygote.start(script, env)` and `Zygote.run(...)`, which is `subprocess.run` with a `Popen`
whose child comes from the zygote (so text mode, input, timeouts, kill and `TimeoutExpired` are
subprocess's own code). `Zygote.serves(argv, env)` says whether an invocation can be forked at all:
when its environment differs from the zygote's in a variable the interpreter reads at startup
(PYTHON*, locale, TZ) or that a module read while the zygote imported it, only a fresh process
behaves right, and the caller must run the real executable.
"""

from __future__ import annotations

import json
import os
import pickle
import selectors
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

# Read by the interpreter itself while it starts (sys.flags, stdio, locale coercion, hash seed, sys.path,
# time.timezone). PYTHONIOENCODING and PYTHONUNBUFFERED only shape sys.std*: the child rebuilds those.
STARTUP_PREFIXES = ("PYTHON", "LC_")
STARTUP_NAMES = ("LANG", "TZ")
EMULATED = ("PYTHONIOENCODING", "PYTHONUNBUFFERED")

MAX_MESSAGE = 1 << 20  # as zygote_server.py's
SERVER = Path(__file__).with_name("zygote_server.py")


def _startup_sensitive(name: str) -> bool:
    return (name.startswith(STARTUP_PREFIXES) or name in STARTUP_NAMES) and name not in EMULATED


# --------------------------------------------------------------------------------------------------
# Client side (imported by the test suite).


class ZygoteError(RuntimeError):
    pass


class Zygote:
    """A running zygote for one entry-point script, owned by one pytest worker."""

    def __init__(self, script: str, env: dict[str, str], proc: subprocess.Popen[bytes], tmpdir: str,
                 hello: dict[str, Any]) -> None:
        self.script = script
        self.env = env
        self.proc = proc
        self.tmpdir = tmpdir
        self.socket_path = os.path.join(tmpdir, "zygote.sock")
        self.import_env_keys: list[str] = hello["env_keys"]

    @classmethod
    def start(cls, script: str | os.PathLike[str], env: Mapping[str, str], *, modules: Sequence[str] | None = None,
              startup_timeout: float = 120) -> Zygote:
        """Start a zygote for SCRIPT (an executable Python script, e.g. the `agent-run` console script)
        under ENV, which should be the environment most invocations will have. MODULES: what to import
        before serving (default: runner's modules)."""
        script = os.fspath(script)
        interpreter = script_interpreter(script)
        if interpreter is None:
            raise ZygoteError(f"{script} is not a Python script with a #! line")
        tmpdir = tempfile.mkdtemp(prefix="agent-run-zygote-")
        log = open(os.path.join(tmpdir, "zygote.log"), "wb")  # noqa: SIM115 -- the zygote's stderr, for errors
        argv = [interpreter, str(SERVER), os.path.join(tmpdir, "zygote.sock"), script]
        if modules is not None:
            argv += ["--modules", json.dumps(list(modules))]
        with log:
            # Same process group and session as the worker (as subprocess.run's children are); stdin is the
            # lifeline: end-of-file there means the worker is gone.
            proc = subprocess.Popen(argv, env=dict(env), cwd="/", stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=log)
        assert proc.stdout is not None
        ready = selectors.DefaultSelector()
        ready.register(proc.stdout, selectors.EVENT_READ)
        line = proc.stdout.readline() if ready.select(startup_timeout) else b""
        ready.close()
        proc.stdout.close()
        if not line:
            proc.kill()
            proc.wait()
            text = Path(tmpdir, "zygote.log").read_text(errors="replace")
            shutil.rmtree(tmpdir, ignore_errors=True)
            raise ZygoteError(f"the zygote did not start:\n{text}")
        return cls(script, dict(env), proc, tmpdir, json.loads(line))

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.tmpdir, ignore_errors=True)

    def log(self) -> str:
        try:
            return Path(self.tmpdir, "zygote.log").read_text(errors="replace")
        except OSError:
            return ""

    def serves(self, argv: Sequence[str | os.PathLike[str]], env: Mapping[str, str] | None) -> bool:
        """Whether a child forked from this zygote behaves as `argv` started afresh under `env` would."""
        if not argv or os.fspath(argv[0]) != self.script:
            return False
        env = os.environ if env is None else env
        names = {k for k in (*env, *self.env) if _startup_sensitive(k)} | set(self.import_env_keys)
        return all(env.get(k) == self.env.get(k) for k in names)

    def run(self, args: Sequence[str | os.PathLike[str]], *, input: Any = None, capture_output: bool = False,
            timeout: float | None = None, check: bool = False, **kwargs: Any) -> subprocess.CompletedProcess[Any]:
        """`subprocess.run`, line for line (POSIX), with the child forked by the zygote."""
        if input is not None:
            if kwargs.get("stdin") is not None:
                raise ValueError("stdin and input arguments may not both be used.")
            kwargs["stdin"] = subprocess.PIPE
        if capture_output:
            if kwargs.get("stdout") is not None or kwargs.get("stderr") is not None:
                raise ValueError("stdout and stderr arguments may not be used with capture_output.")
            kwargs["stdout"] = subprocess.PIPE
            kwargs["stderr"] = subprocess.PIPE
        with ZygotePopen(self, args, **kwargs) as process:
            try:
                stdout, stderr = process.communicate(input, timeout=timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
                raise
            except:  # Including KeyboardInterrupt, communicate handled that.
                process.kill()
                # We don't call process.wait() as .__exit__ does that for us.
                raise
            retcode = process.poll()
            if check and retcode:
                raise subprocess.CalledProcessError(retcode, process.args, output=stdout, stderr=stderr)
        return subprocess.CompletedProcess(process.args, retcode, stdout, stderr)  # type: ignore[arg-type]


class ZygotePopen(subprocess.Popen):  # type: ignore[type-arg]
    """A Popen whose child is forked by a zygote rather than fork+exec'd here. `pid` is the child's
    real pid (signals go straight to it); its exit status comes from the zygote, which is its parent."""

    def __init__(self, zygote: Zygote, args: Any, *, interpreter: str | None = None, **kwargs: Any) -> None:
        """`interpreter`: the child's sys.executable, as a script whose `#!` names that path (a link to the
        zygote's interpreter, e.g. a venv's bin/python) would have it; else the zygote's own."""
        self._zygote = zygote
        self._interpreter = interpreter
        self._zygote_conn: socket.socket | None = None
        self._zygote_status: int | None = None
        super().__init__(args, **kwargs)

    def _execute_child(self, args: Any, executable: Any, preexec_fn: Any, close_fds: bool, pass_fds: Any, cwd: Any,
                       env: Any, startupinfo: Any, creationflags: Any, shell: bool, p2cread: int, p2cwrite: int,
                       c2pread: int, c2pwrite: int, errread: int, errwrite: int, *rest: Any) -> None:
        # rest: restore_signals, gid, gids, uid, umask, start_new_session, process_group (3.11+)
        if (shell or executable is not None or preexec_fn is not None or pass_fds or not close_fds
                or tuple(rest) != (True, None, None, None, -1, False, -1)[: len(rest)]):
            raise NotImplementedError("the zygote runs plain `Popen(argv, cwd=, env=, stdin/stdout/stderr=)` only")
        argv = [os.fsdecode(a) for a in ([args] if isinstance(args, (str, bytes, os.PathLike)) else args)]
        request = {
            "argv": argv,
            "env": {os.fsdecode(k): os.fsdecode(v) for k, v in (os.environ if env is None else env).items()},
            "cwd": os.path.abspath(os.fsdecode(cwd)) if cwd is not None else os.getcwd(),
        }
        if self._interpreter is not None:
            request["executable"] = self._interpreter
        sys.audit("subprocess.Popen", argv[0], argv, cwd, env)
        fds = [p2cread if p2cread != -1 else 0, c2pwrite if c2pwrite != -1 else 1, errwrite if errwrite != -1 else 2]
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            try:
                conn.connect(self._zygote.socket_path)
                socket.send_fds(conn, [pickle.dumps(request)], fds)
                reply = conn.recv(MAX_MESSAGE)
            finally:
                self._close_pipe_fds(p2cread, p2cwrite, c2pread, c2pwrite, errread, errwrite)
            if not reply:
                raise ZygoteError(f"the zygote did not start {argv}:\n{self._zygote.log()}")
            message = pickle.loads(reply)
            if message[0] == "error":  # as subprocess raises a failed chdir
                raise OSError(message[1], os.strerror(message[1]), cwd)
            _, self.pid = message
        except BaseException:
            conn.close()
            raise
        self._zygote_conn = conn
        self._child_created = True

    def _try_wait(self, wait_flags: int) -> tuple[int, int]:
        """waitpid(self.pid, wait_flags), answered by the zygote."""
        if self._zygote_status is None:
            conn = self._zygote_conn
            assert conn is not None
            conn.setblocking(not wait_flags & os.WNOHANG)
            try:
                data = conn.recv(MAX_MESSAGE)
            except BlockingIOError:
                return (0, 0)
            if not data:
                raise ChildProcessError(f"the zygote exited before child {self.pid} did:\n{self._zygote.log()}")
            _, self._zygote_status = pickle.loads(data)
            conn.close()
        return (self.pid, self._zygote_status)

    def _internal_poll(self, _deadstate: int | None = None, **_: Any) -> int | None:
        if self.returncode is None:
            if not self._waitpid_lock.acquire(False):
                return None
            try:
                if self.returncode is not None:
                    return self.returncode
                try:
                    pid, sts = self._try_wait(os.WNOHANG)
                except OSError:
                    if _deadstate is None:
                        raise
                    self.returncode = _deadstate
                else:
                    if pid == self.pid:
                        self._handle_exitstatus(sts)
            finally:
                self._waitpid_lock.release()
        return self.returncode


def popen(zygote: Zygote | None, argv: Sequence[str], **kwargs: Any) -> subprocess.Popen[Any]:
    """`subprocess.Popen(argv, **kwargs)` (cwd, env, stdio), forked from `zygote` when it serves `argv` under
    kwargs' env: for a test that signals or kills the process itself, which is as real either way."""
    if zygote is not None and zygote.serves(argv, kwargs.get("env")):
        return ZygotePopen(zygote, argv, **kwargs)
    return subprocess.Popen(argv, **kwargs)


def run(zygote: Zygote | None, argv: Sequence[str], **kwargs: Any) -> subprocess.CompletedProcess[Any]:
    """`subprocess.run(argv, **kwargs)`, forked from `zygote` when it serves `argv` under kwargs' env: agent-run
    somewhere the `agent_run` fixture does not run it (another checkout, another environment)."""
    if zygote is not None and zygote.serves(argv, kwargs.get("env")):
        return zygote.run(argv, **kwargs)
    return subprocess.run(argv, **kwargs)


def script_interpreter(script: str) -> str | None:
    """The interpreter a `#!` Python script (a console-script wrapper) runs on, if it is one."""
    try:
        with open(script, "rb") as f:
            first = f.readline(4096)
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    words = first[2:].decode(errors="replace").split()
    if len(words) != 1 or "python" not in os.path.basename(words[0]):
        return None
    return words[0]
