"""The zygote's server side, run as a script: `python3 zygote_server.py SOCKET SCRIPT` (see zygote.py,
the client, for the design). Kept apart so that the client module stays small and the server imports
nothing of the test package."""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import selectors
import signal
import socket
import sys
import tempfile
import threading
from typing import Any

MAX_MESSAGE = 1 << 20  # one request or reply, pickled (argv, env, cwd)


def _open_fds() -> list[int]:
    """This process's open descriptors above 2 (not the one listing them)."""
    found = []
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd > 2:
            try:
                os.fstat(fd)
            except OSError:
                continue
            found.append(fd)
    return found


class _Job:
    """What a forked child runs once it has become the invocation."""

    def __init__(self, script: str, argv: list[str], executable: str | None) -> None:
        self.script = script
        self.argv = argv
        self.executable = executable  # the interpreter the script's `#!` names, when not the zygote's own


class _RecordingEnviron(type(os.environ)):  # type: ignore[misc]
    """os.environ, noting every name looked up (while the zygote imports)."""

    names: set[str]

    def __getitem__(self, key: str) -> str:
        self.names.add(key)
        return super().__getitem__(key)


# Imported on first use by most runs (found by listing what children still imported): the secret masker's
# detectors (with requests), the HTTP transport, TLS, the price database (runner/model/catalog.py: ~40 ms a
# run). Optional: whatever is missing is skipped.
LATE_IMPORTS = ("detect_secrets.core.scan", "detect_secrets.core.secrets_collection", "detect_secrets.plugins.*",
                "requests", "httpcore2", "h11", "truststore", "anyio.streams.tls", "certifi", "encodings.idna",
                "stringprep", "genai_prices.data", "genai_prices.data_snapshot")

# Modules known to read the working directory on import, and how a child puts right what they kept.
# (rich comes with httpx's optional CLI when installed, e.g. by twine; it keeps the cwd for tracebacks.)
CWD_FIXUPS = {"multiprocessing.process": "ORIGINAL_DIR", "rich": "_IMPORT_CWD"}


def _import_all(modules: list[str] | None) -> tuple[set[str], set[str]]:
    """Import what the invocations will need. Return the environment variables read meanwhile, and the
    modules that read the working directory (whose values would be the zygote's, not the child's)."""
    import importlib
    import pkgutil

    def names(package: str) -> list[str]:
        return [m.name for m in pkgutil.walk_packages(importlib.import_module(package).__path__, package + ".")]

    real, getcwd = os.environ, os.getcwd
    recording = _RecordingEnviron(real._data, real.encodekey, real.decodekey, real.encodevalue, real.decodevalue)
    recording.names = set()
    cwd_readers: set[str] = set()

    def recording_getcwd() -> str:
        cwd_readers.add(sys._getframe(1).f_globals.get("__name__", "?"))
        return getcwd()

    os.environ = recording  # type: ignore[assignment]  # noqa: B003 -- shares real._data: the same environment
    os.getcwd = recording_getcwd
    try:
        for name in names("runner") if modules is None else modules:
            importlib.import_module(name)
        for name in LATE_IMPORTS if modules is None else ():
            try:
                for each in names(name[:-2]) if name.endswith(".*") else [name]:
                    importlib.import_module(each)
            except ImportError:
                pass
    finally:
        os.environ = real  # noqa: B003
        os.getcwd = getcwd
    return set(recording.names), cwd_readers - set(CWD_FIXUPS)


class _Server:
    def __init__(self, socket_path: str, script: str, modules: list[str] | None) -> None:
        self.script = script
        # A fresh interpreter's state, before anything here changes it: what each child restores.
        self.startup_signals = {s: signal.getsignal(s) for s in signal.valid_signals()}
        self.startup_mask = signal.pthread_sigmask(signal.SIG_BLOCK, [])
        self.startup_env = dict(os.environ)
        self.stdio_encoding = sys.stdout.encoding
        self.stdio_errors = sys.stdout.errors
        self.stdin_errors = sys.stdin.errors
        # The script's own directory, as the interpreter puts it first on sys.path (not this file's).
        path0 = script
        while os.path.islink(path0):
            path0 = os.path.join(os.path.dirname(path0), os.readlink(path0))
        self.path0 = os.path.dirname(path0)
        sys.path[0] = self.path0
        with open(script, "rb") as f:
            self.code = compile(f.read(), script, "exec", dont_inherit=True)
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # ^C reaches the whole process group: children restore it
        self.env_keys, cwd_readers = _import_all(modules)
        if cwd_readers:
            raise SystemExit(f"zygote: {sorted(cwd_readers)} read the working directory on import: a child would "
                             "see the zygote's (add them to CWD_FIXUPS in tests/fakes/zygote_server.py)")
        if threading.active_count() != 1 or len(os.listdir("/proc/self/task")) != 1:
            raise SystemExit(f"zygote: imports started threads; cannot fork safely: {threading.enumerate()}")
        # Descriptors the imports opened stay in the children (as in a fresh process); all others close.
        self.keep_fds = set(_open_fds())
        import gc

        gc.collect()
        gc.freeze()  # children's collections skip the imported heap (and leave its pages shared)
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.listener.bind(socket_path)
        self.listener.listen(64)
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.listener, selectors.EVENT_READ, "accept")
        self.selector.register(sys.stdin.fileno(), selectors.EVENT_READ, "lifeline")
        self.children: dict[int, tuple[socket.socket, int | None]] = {}  # pid -> (client connection, pidfd)
        self.polling = not hasattr(os, "pidfd_open")

    def serve(self) -> _Job | None:
        """Serve until the lifeline closes (returns None); in a forked child, return its job."""
        print(json.dumps({"pid": os.getpid(), "env_keys": sorted(self.env_keys)}), flush=True)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)  # the client read its line; nothing else goes there
        os.close(devnull)
        while True:
            for key, _ in self.selector.select(0.05 if self.polling else None):
                if key.data == "lifeline":
                    if not os.read(key.fd, 4096):
                        return None
                elif key.data == "accept":
                    job = self._accept()
                    if job is not None:
                        return job
                else:
                    self._reap(key.data)
            if self.polling:
                for pid in list(self.children):
                    self._reap(pid, block=False)

    def _accept(self) -> _Job | None:
        conn, _ = self.listener.accept()
        fds: list[int] = []
        try:
            conn.settimeout(30)
            data, fds, _, _ = socket.recv_fds(conn, MAX_MESSAGE, 3)
            request = pickle.loads(data)
            if len(fds) != 3:
                raise ValueError(f"expected 3 descriptors, got {len(fds)}")
            pid = os.fork()
        except Exception as e:
            print(f"zygote: bad request: {e!r}", file=sys.stderr, flush=True)
            for fd in fds:
                os.close(fd)
            conn.close()
            return None
        if pid == 0:
            return self._become(conn, fds, request)
        for fd in fds:
            os.close(fd)
        pidfd = None
        if not self.polling:
            try:
                pidfd = os.pidfd_open(pid)
            except OSError:
                self.polling = True
            else:
                self.selector.register(pidfd, selectors.EVENT_READ, pid)
        self.children[pid] = (conn, pidfd)
        return None

    def _reap(self, pid: int, block: bool = True) -> None:
        got, status = os.waitpid(pid, 0 if block else os.WNOHANG)
        if got != pid:
            return
        conn, pidfd = self.children.pop(pid)
        if pidfd is not None:
            self.selector.unregister(pidfd)
            os.close(pidfd)
        with contextlib.suppress(OSError):  # the client is gone (interrupted): nobody to tell
            conn.send(pickle.dumps(("exit", status)))
        conn.close()

    # ---- in the child

    def _become(self, conn: socket.socket, fds: list[int], request: dict[str, Any]) -> _Job:
        """Turn this forked child into `python3 SCRIPT ARGS...` started afresh, as subprocess.run would."""
        try:
            for sig, handler in self.startup_signals.items():
                if handler is not None and sig not in (signal.SIGKILL, signal.SIGSTOP):
                    with contextlib.suppress(OSError, ValueError):  # the C library's own real-time signals
                        signal.signal(sig, handler)
            signal.pthread_sigmask(signal.SIG_SETMASK, self.startup_mask)
            for target, fd in enumerate(fds):
                os.dup2(fd, target)
            for fd in fds:
                os.close(fd)
            try:
                os.chdir(request["cwd"])
            except OSError as e:
                conn.send(pickle.dumps(("error", e.errno, request["cwd"])))
                os._exit(255)
            env: dict[str, str] = request["env"]
            os.environ.clear()
            os.environ.update(env)
            conn.send(pickle.dumps(("started", os.getpid())))
            # Close what belongs to the zygote (its objects first, so nothing closes a reused number later).
            self.selector.close()
            self.listener.close()
            for other, pidfd in self.children.values():
                other.close()
                if pidfd is not None:
                    os.close(pidfd)
            self.children.clear()
            conn.close()
            for fd in _open_fds():
                if fd not in self.keep_fds:
                    os.close(fd)
            self._fresh_stdio(env)
            self._fresh_state(request["cwd"])
            return _Job(self.script, request["argv"], request.get("executable"))
        except BaseException:
            import traceback

            traceback.print_exc()
            os._exit(255)

    def _fresh_stdio(self, env: dict[str, str]) -> None:
        """sys.stdin/stdout/stderr as the interpreter creates them (Python/pylifecycle.c create_stdio)."""
        import io

        encoding, errors, stdin_errors = self.stdio_encoding, self.stdio_errors, self.stdin_errors
        if env.get("PYTHONIOENCODING") != self.startup_env.get("PYTHONIOENCODING"):
            # Differing only here: the defaults are this interpreter's (same locale, same UTF-8 mode).
            enc, _, err = (env.get("PYTHONIOENCODING") or "").partition(":")
            if self.startup_env.get("PYTHONIOENCODING"):
                raise RuntimeError("the zygote itself must start without PYTHONIOENCODING")
            if enc:
                import codecs

                encoding = codecs.lookup(enc).name  # the codec's own name, as config_get_codec_name() gives it
            errors = stdin_errors = err or errors
        buffered = not env.get("PYTHONUNBUFFERED")
        streams = []
        for fd, name, mode, errs in ((0, "<stdin>", "r", stdin_errors), (1, "<stdout>", "w", errors),
                                     (2, "<stderr>", "w", "backslashreplace")):
            write = mode == "w"
            buf = open(fd, mode + "b", -1 if buffered or not write else 0, closefd=False)  # noqa: SIM115
            raw = buf if not buffered and write else buf.raw
            raw.name = name
            line_buffering = buffered and (raw.isatty() or fd == 2)
            stream = io.TextIOWrapper(buf, encoding, errs, "\n", line_buffering, not buffered)
            stream.mode = mode
            streams.append(stream)
        sys.stdin, sys.stdout, sys.stderr = streams
        sys.__stdin__, sys.__stdout__, sys.__stderr__ = streams

    def _fresh_state(self, cwd: str) -> None:
        for module, attribute in CWD_FIXUPS.items():
            if module in sys.modules:
                setattr(sys.modules[module], attribute, cwd)
        import random

        random.seed()  # (os.fork's at-fork hook does too)
        tempfile.tempdir = None  # recomputed from this child's TMPDIR on first use


def _run_child(job: _Job, code: Any) -> None:
    """Run the script as the interpreter runs a `python3 SCRIPT` main module, and exit the way it does."""
    import builtins
    import importlib.machinery
    import types

    if job.executable is not None:  # a link to this interpreter elsewhere: as `#!DIR/python` sets it
        sys.executable = job.executable
    sys.argv = list(job.argv)
    sys.orig_argv = [sys.executable, *job.argv]
    main = types.ModuleType("__main__")
    main.__dict__.update({"__file__": job.script, "__cached__": None, "__builtins__": builtins,
                          "__loader__": importlib.machinery.SourceFileLoader("__main__", job.script)})
    sys.modules["__main__"] = main
    status = 0
    try:
        exec(code, main.__dict__)
    except SystemExit as e:  # Python/pythonrun.c _Py_HandleSystemExit
        if e.code is None:
            status = 0
        elif isinstance(e.code, int):
            status = e.code & 0xFF
        else:
            if sys.stderr is not None:
                sys.stderr.write(str(e.code))
                sys.stderr.write("\n")
            status = 1
    except BaseException as e:  # PyErr_Print: sys.last_*, sys.excepthook, without this file's frames
        tb = e.__traceback__.tb_next if e.__traceback__ is not None else None
        e.__traceback__ = tb  # the display takes the exception's own traceback
        sys.last_type, sys.last_value, sys.last_traceback = type(e), e, tb
        try:
            sys.excepthook(type(e), e, tb)
        except BaseException:
            import traceback

            traceback.print_exception(type(e), e, tb)
        if isinstance(e, KeyboardInterrupt):
            # The interpreter finishes shutting down, then dies by SIGINT (so its parent sees -2).
            global _SIGINT_AT_EXIT
            _SIGINT_AT_EXIT = True
        status = 1
    # The interpreter's own shutdown: non-daemon threads joined, atexit handlers, streams flushed (120 if
    # stdout cannot be), objects finalized.
    raise SystemExit(status)


_SIGINT_AT_EXIT = False


def _exit_by_sigint() -> None:
    """The zygote's first atexit handler, so a child's last: after an uncaught KeyboardInterrupt."""
    if not _SIGINT_AT_EXIT:
        return
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except Exception:
            pass
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGINT)


def _main() -> None:
    socket_path, script = sys.argv[1], sys.argv[2]
    modules = json.loads(sys.argv[4]) if len(sys.argv) > 4 and sys.argv[3] == "--modules" else None
    import atexit

    atexit.register(_exit_by_sigint)
    server = _Server(socket_path, script, modules)
    job = server.serve()
    if job is None:
        return
    code = server.code
    del server
    _run_child(job, code)


if __name__ == "__main__":
    _main()
