"""bubblewrap: the argv that puts one command inside the sandbox. Pure, but for `find_bwrap`.

Every namespace is new (user, pid, ipc, uts, cgroup, and net unless the network is
"all"); capabilities are dropped, `no_new_privs` is set (bwrap always sets it), nested
user namespaces are refused, and the sandbox dies with its parent. The pid namespace
gives three guarantees the runner relies on: a command cannot see or signal the runner,
`/proc/$PPID/environ` does not exist for it, and when the command exits (or bwrap is
killed) every process it started dies, `setsid` or not.
"""

from __future__ import annotations

import os
import shutil

from runner.sandbox.layout import Layout

BWRAP_ENV = "AGENT_RUN_BWRAP"  # a trusted override of which binary to use (tests, odd installs)


def find_bwrap() -> str | None:
    override = os.environ.get(BWRAP_ENV)
    if override:
        return override if os.access(override, os.X_OK) else None
    return shutil.which("bwrap")


def bwrap_argv(bwrap: str, layout: Layout, command: list[str], *, share_net: bool,
               binds: list[tuple[str, str]] | None = None) -> list[str]:
    """`binds`: extra (host path, sandbox path) read-write binds (the proxy socket, the bridge)."""
    argv = [bwrap, "--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent", "--new-session",
            "--cap-drop", "ALL"]
    if share_net:
        argv.append("--share-net")
    argv += mount_args(layout)
    for src, dest in binds or []:
        argv += ["--ro-bind", src, dest]
    argv += ["--proc", "/proc", "--dev", "/dev", "--chdir", layout.chdir, "--", *command]
    return argv


def mount_args(layout: Layout) -> list[str]:
    argv: list[str] = []
    for m in layout.mounts:
        if m.kind == "ro":
            argv += ["--ro-bind", m.src, m.dest]
        elif m.kind == "rw":
            argv += ["--bind", m.src, m.dest]
        elif m.kind == "tmpfs":
            argv += ["--tmpfs", m.dest]
        elif m.kind == "mask-file":
            argv += ["--ro-bind", "/dev/null", m.dest]
        elif m.kind == "symlink":
            argv += ["--symlink", m.src, m.dest]
    return argv
