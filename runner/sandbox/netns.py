"""The run's network namespace under an allow-list: made once, with its one bridge, and joined by each command.

Before this, every sandboxed command started its own Python bridge in its own network namespace (~25-35 ms
a call, and for every `rg` that `grep` runs). Now a holder — bwrap running `bridge.py --hold` in a new user
and network namespace — lives for the run, and each command's bwrap starts inside that namespace with
`--share-net`: bubblewrap 0.8 cannot join a namespace itself, so `nsenter` joins the holder's user namespace
(it owns the network namespace, and joining that needs its capabilities) and network namespace, then execs
bwrap, which makes the command's own user, pid, ipc, uts and mount namespaces as before (caps dropped,
nested user namespaces refused). The namespace has only loopback: the bridge on 127.0.0.1:3128, the only way
out, goes to the run's egress proxy, which decides each connection under the call running when it is made,
exactly as with a bridge per call (the proxy socket was already one per run).

What the commands of one run now share: that loopback (a port one command listens on is reachable by
another running at the same time) and abstract Unix sockets. Processes still end with their call (its pid
namespace), so nothing of an earlier call is left listening. MCP servers and the runner's own helpers keep
a bridge of their own (another principal does not share the commands' loopback).
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import subprocess
from dataclasses import dataclass
from typing import Any

from runner.sandbox.bwrap import mount_args
from runner.sandbox.layout import Layout

START_TIMEOUT_S = 20.0  # a hang bound: the holder is ready in ~30 ms


class NetnsUnavailable(RuntimeError):
    pass


@dataclass
class NetHolder:
    proc: subprocess.Popen[bytes]
    pid: int  # the holder's first process inside its namespaces, as the runner sees it
    net_ino: int  # its network namespace: checked before each join, so a reused pid is never joined
    nsenter: str

    def prefix(self) -> list[str] | None:
        """The argv prefix that puts the next command in the run's network namespace; None once the holder is
        gone (the caller then falls back to a bridge of the command's own)."""
        if self.proc.poll() is not None:
            return None
        try:
            if os.stat(f"/proc/{self.pid}/ns/net").st_ino != self.net_ino:
                return None
        except OSError:
            return None
        return [self.nsenter, f"--user=/proc/{self.pid}/ns/user", f"--net=/proc/{self.pid}/ns/net",
                "--preserve-credentials", "--"]

    def close(self) -> None:
        if self.proc.stdin is not None:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()  # the bridge serves until its stdin closes
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def start_holder(bwrap: str, layout: Layout, python: str, bridge: list[str], binds: list[tuple[str, str]]
                 ) -> NetHolder:
    """`bridge`: the bridge's argv inside (`python -I -S bridge.py PORT SOCKET`); `binds`: what it needs
    (the bridge script, the proxy socket). Raises NetnsUnavailable when this machine cannot do it."""
    nsenter = shutil.which("nsenter")
    if nsenter is None:
        raise NetnsUnavailable("nsenter (util-linux) is not installed")
    info_r, info_w = os.pipe()
    # No --disable-userns here: each command's bwrap makes its own user namespace inside this one. No --dev
    # either: for it an unprivileged bwrap nests a second user namespace, and the network namespace would then
    # belong to one no process is in (nothing to join). Only the runner's bridge ever runs in the holder; its
    # environment is empty (no key, no token).
    argv = [bwrap, "--unshare-user", "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
            "--unshare-cgroup-try", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
            "--info-fd", str(info_w), *mount_args(layout), *_ro_binds(binds), "--proc", "/proc",
            "--chdir", "/", "--", python, *bridge, "--hold"]
    try:
        proc = subprocess.Popen(argv, env={}, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, pass_fds=(info_w,))
    except OSError as exc:
        os.close(info_r)
        os.close(info_w)
        raise NetnsUnavailable(f"cannot start the holder: {exc}") from None
    os.close(info_w)
    try:
        pid = int(_read_json(info_r)["child-pid"])
        assert proc.stdout is not None
        if _readline(proc.stdout.fileno()) != b"ready\n":
            raise NetnsUnavailable("the holder's bridge did not start")
        holder = NetHolder(proc, pid, os.stat(f"/proc/{pid}/ns/net").st_ino, nsenter)
    except (NetnsUnavailable, OSError, ValueError, KeyError, TypeError) as exc:
        proc.kill()
        proc.wait()
        raise NetnsUnavailable(f"the holder did not start: {exc}") from None
    finally:
        os.close(info_r)
    return holder


def _ro_binds(binds: list[tuple[str, str]]) -> list[str]:
    return [arg for src, dest in binds for arg in ("--ro-bind", src, dest)]


def _read_json(fd: int) -> dict[str, Any]:
    """bwrap's one JSON object on its info fd (`{"child-pid": N}`), bounded in time."""
    data = b""
    while True:
        if not select.select([fd], [], [], START_TIMEOUT_S)[0]:
            raise NetnsUnavailable("no word from bwrap")
        chunk = os.read(fd, 4096)
        if not chunk:
            raise NetnsUnavailable(f"bwrap said only {data[:200]!r}")
        data += chunk
        with contextlib.suppress(ValueError):
            return dict(json.loads(data))


def _readline(fd: int) -> bytes:
    line = b""
    while not line.endswith(b"\n"):
        if not select.select([fd], [], [], START_TIMEOUT_S)[0]:
            raise NetnsUnavailable("no word from the holder's bridge")
        chunk = os.read(fd, 1)
        if not chunk:
            break
        line += chunk
    return line
