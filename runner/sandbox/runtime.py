"""One run's sandbox: built once from the policy, it wraps every process the runner starts.

`wrap(argv, env)` returns the argv and environment that run `argv` inside the sandbox
(or unchanged, when the sandbox is off or unavailable). Whoever starts a process —
the bash tool, a task's check, the runner's own git, an MCP stdio server — calls it.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runner.policy.egress import Verdict
from runner.policy.sandbox_config import SandboxConfig
from runner.record.integrity import AUDIT_KEY_ENV
from runner.sandbox.bwrap import bwrap_argv
from runner.sandbox.credmounts import credential_mounts
from runner.sandbox.gitmounts import git_readonly
from runner.sandbox.gitwalk import GitWalk
from runner.sandbox.layout import Layout, LayoutInput, build_layout, read_only_mount
from runner.sandbox.netns import NetHolder, NetnsUnavailable, start_holder
from runner.sandbox.probe import Probe, probe
from runner.sandbox.proxy import Decide, EgressProxy

PROXY_PORT = 3128  # inside the sandbox's own network namespace; nothing else listens there
INSIDE = "/run/agent-run"  # where the bridge and the proxy socket appear inside
PROXY_VARS = ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "all_proxy")


class SandboxUnavailable(RuntimeError):
    pass


class _RunProxy:
    """The type of RUN_PROXY: `proxy=None` must be able to mean "no proxy, so no network"."""


RUN_PROXY = _RunProxy()


@dataclass
class Sandbox:
    config: SandboxConfig
    probe: Probe
    active: bool
    reason: str | None
    layout: Layout | None = None
    scratch: Path | None = None  # HOME and TMPDIR, writable inside
    private: Path | None = None  # the runner's own (proxy socket, git objects), never visible inside
    proxy: EgressProxy | None = None
    base: LayoutInput | None = None
    extra_proxies: list[EgressProxy] = field(default_factory=list)
    net: NetHolder | None = None  # the run's network namespace and its one bridge (runner/sandbox/netns.py)
    gitwalk: GitWalk | None = None  # the workspace's `.git` paths, listed again from what changed
    _closed: bool = field(default=False, repr=False)

    def describe(self) -> dict[str, Any]:
        """The `sandbox` field of run_started and summary.json."""
        return {"mode": self.config.mode, "active": self.active,
                "mechanism": self.probe.mechanism if self.active else None,
                "network": self.config.describe_network() if self.active else "all", "reason": self.reason}

    def wrap(self, argv: list[str], env: Mapping[str, str], *, layout: Layout | None = None,
             share_net: bool | None = None, proxy: EgressProxy | _RunProxy | None = RUN_PROXY,
             caller: str | None = None) -> tuple[list[str], dict[str, str]]:
        """`share_net` and `proxy` override the run's network for one process (an MCP server's own
        `sandbox.network`): the host network, an egress proxy of its own, or none at all (`proxy=None`
        with `share_net=False`). Left at RUN_PROXY, the process gets the run's own proxy, if any: a command of
        the run (no `layout` of its own) joins the run's network namespace and its bridge; another principal
        (an MCP server, the runner's git) gets a bridge of its own."""
        own_layout = layout is not None
        env = dict(env)
        env.pop(AUDIT_KEY_ENV, None)  # whatever a caller passes on: the key would let the process re-chain the log
        if not self.active:
            return argv, env
        layout = layout or self.layout
        share = self.config.network == "all" if share_net is None else share_net
        chosen = self.proxy if isinstance(proxy, _RunProxy) else proxy
        proxy = None if share else chosen
        assert layout is not None and self.probe.bwrap is not None
        layout = self._with_git(layout)
        env.update(layout.env)
        for var in ("NO_PROXY", "no_proxy", *PROXY_VARS):
            env.pop(var, None)
        binds: list[tuple[str, str]] = []
        command = argv
        if proxy is not None:  # the bridge inside, the run's or the call's own, listens on PROXY_PORT
            auth = f"agent-run:{caller}@" if caller and proxy is self.proxy else ""
            env.update({var: f"http://{auth}127.0.0.1:{PROXY_PORT}" for var in PROXY_VARS})
        joined = self.net.prefix() if proxy is not None and proxy is self.proxy and not own_layout and self.net \
            else None
        if joined is not None:
            return [*joined, *bwrap_argv(self.probe.bwrap, layout, argv, share_net=True)], env
        if proxy is not None:
            bridge = str(Path(__file__).with_name("bridge.py"))
            binds = [(bridge, f"{INSIDE}/bridge.py"), (proxy.socket_path, f"{INSIDE}/proxy.sock")]
            command = [_python(), "-I", "-S", f"{INSIDE}/bridge.py", str(PROXY_PORT), f"{INSIDE}/proxy.sock", "--",
                       *argv]
        return bwrap_argv(self.probe.bwrap, layout, command, share_net=share, binds=binds), env

    def _with_git(self, layout: Layout) -> Layout:
        """`layout` with every git control path read-only, listed now, not at open: a `.git` made since is too."""
        if self.base is None:
            return layout
        control = self.gitwalk.control() if self.gitwalk is not None else None
        return git_readonly(layout, self.base.workspace, control=control)

    def read_only(self, path: Path) -> str | None:
        """The mount this sandbox made read-only that shows `path` to a command of the run, or None (writable
        there, not shown, or no sandbox): where a write it refused with EROFS was refused."""
        if not self.active or self.layout is None:
            return None
        return read_only_mount(self._with_git(self.layout), str(path))

    @contextlib.contextmanager
    def calling(self, decide: Decide | None) -> Iterator[str | None]:
        """A token naming one process's caller to the run's egress proxy while the block runs (the process's
        lifetime): its connections are decided by `decide`. None when there is no proxy to tell."""
        if decide is None or self.proxy is None or not self.active:
            yield None
            return
        token = secrets.token_urlsafe(18)
        self.proxy.callers[token] = decide
        try:
            yield token
        finally:
            self.proxy.callers.pop(token, None)

    def layout_with(self, readable: list[Path], writable: list[Path], scratch: Path | None = None) -> Layout | None:
        """The run's layout plus more paths (an MCP server's `sandbox.readOnly` / `sandbox.writable`);
        `scratch`: another principal's own HOME and TMPDIR (`own_scratch`) in place of the commands'."""
        if not self.active or self.base is None:
            return None
        if not readable and not writable and scratch is None:
            return self.layout
        base = self.base
        return build_layout(LayoutInput(
            workspace=base.workspace, scratch=scratch or base.scratch, protected=base.protected,
            readable=(*base.readable, *readable), writable=(*base.writable, *writable), environ=base.environ,
            python_prefixes=base.python_prefixes, overlays=base.overlays))

    def principal_layout(self, scratch: Path, writable: list[Path], workspace_writable: bool) -> Layout | None:
        """The view of another principal of the run (a lifecycle hook): the policy's filesystem view with its own
        HOME and TMPDIR (`own_scratch`), the workspace read-only unless `workspace_writable`, `writable` besides."""
        if not self.active or self.base is None:
            return None
        base = self.base
        return build_layout(LayoutInput(
            workspace=base.workspace, scratch=scratch, protected=base.protected, readable=base.readable,
            writable=(*base.writable, *writable) if workspace_writable else tuple(writable), environ=base.environ,
            python_prefixes=base.python_prefixes, workspace_writable=workspace_writable, overlays=base.overlays))

    def own_scratch(self, name: str) -> Path | None:
        """A fresh HOME and TMPDIR for one more principal (an MCP stdio server): one principal, one home. It
        lives in the runner's private dir, so neither the commands nor another server can see it, and starts
        empty (no ~/.gitconfig, no ~/.config/git: an empty global git config). Removed with the sandbox."""
        if not self.active or self.private is None:
            return None
        own = Path(tempfile.mkdtemp(prefix=f"home-{name}-", dir=self.private))
        for sub in ("home", "tmp"):
            (own / sub).mkdir()
        return own

    def own_proxy(self, name: str, decide: Decide) -> EgressProxy | None:
        """An egress proxy for one process, deciding its connections with `decide`; closed with the sandbox."""
        if not self.active or self.private is None:
            return None
        proxy = EgressProxy(str(self.private / f"proxy-{name}.sock"), decide).start()
        self.extra_proxies.append(proxy)
        return proxy

    def readonly_layout(self, extra_ro: list[Path], extra_rw: list[Path]) -> Layout | None:
        """The runner's own helpers (git): the workspace read-only, plus what they need."""
        if not self.active or self.base is None:
            return None
        inp = LayoutInput(workspace=self.base.workspace, scratch=self.base.scratch, protected=self.base.protected,
                          readable=tuple(extra_ro), writable=tuple(extra_rw), environ=self.base.environ,
                          python_prefixes=self.base.python_prefixes, workspace_writable=False,
                          overlays=self.base.overlays)
        return build_layout(inp)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self.net is not None:
            self.net.close()
        for proxy in [self.proxy, *self.extra_proxies]:
            if proxy is not None:
                proxy.close()
        for d in (self.scratch, self.private):
            if d is not None:
                shutil.rmtree(d, ignore_errors=True)


def open_sandbox(config: SandboxConfig, *, workspace: Path, protected: list[Path], readable: list[Path],
                 writable: list[Path], environ: Mapping[str, str], decide_net: Decide | None = None) -> Sandbox:
    """Raises SandboxUnavailable when the mode is `required` and this machine cannot give one."""
    found = probe()
    if config.mode == "off":
        _nondumpable()
        return Sandbox(config, found, False, "sandbox.mode is off")
    if not found.available:
        if config.mode == "required":
            raise SandboxUnavailable(f"sandbox required but unavailable: {found.reason}")
        _nondumpable()
        return Sandbox(config, found, False, found.reason)
    private = Path(tempfile.mkdtemp(prefix="agent-run-private-"))
    scratch = Path(tempfile.mkdtemp(prefix="agent-run-sandbox-"))
    for sub in ("home", "tmp"):
        (scratch / sub).mkdir()
    inp = LayoutInput(workspace=workspace, scratch=scratch, protected=tuple(protected), readable=tuple(readable),
                      writable=tuple(writable), environ=dict(environ), python_prefixes=_python_prefixes(),
                      overlays=credential_mounts(workspace, private))  # git's stored credentials, hidden
    box = Sandbox(config, found, True, None, build_layout(inp), scratch, private, base=inp,
                  gitwalk=GitWalk(workspace))
    if config.network == "allow":
        box.proxy = EgressProxy(str(private / "proxy.sock"), decide_net or _deny_all).start()
        box.net = _run_netns(box)
    _nondumpable()
    return box


def _run_netns(box: Sandbox) -> NetHolder | None:
    """The run's network namespace with its bridge, once tried: None (a bridge per command, as before) when
    this machine cannot join one (no nsenter, or no user namespace inside another)."""
    assert box.proxy is not None and box.probe.bwrap is not None and box.layout is not None
    layout = box.readonly_layout([], [])  # the bridge's interpreter and nothing it could write
    assert layout is not None
    bridge = str(Path(__file__).with_name("bridge.py"))
    try:
        holder = start_holder(box.probe.bwrap, layout, _python(),
                              ["-I", "-S", f"{INSIDE}/bridge.py", str(PROXY_PORT), f"{INSIDE}/proxy.sock"],
                              [(bridge, f"{INSIDE}/bridge.py"), (box.proxy.socket_path, f"{INSIDE}/proxy.sock")])
    except NetnsUnavailable:
        return None
    joined = holder.prefix()
    argv = [*(joined or []), *bwrap_argv(box.probe.bwrap, box.layout, ["true"], share_net=True)]
    try:
        works = joined is not None and subprocess.run(argv, env={}, capture_output=True, timeout=20,
                                                       stdin=subprocess.DEVNULL).returncode == 0
    except (OSError, subprocess.SubprocessError):
        works = False
    if not works:
        holder.close()
        return None
    return holder


def _deny_all(host: str, port: int) -> Verdict:
    return Verdict(False, False, "no policy")


def _python() -> str:
    return os.path.realpath(sys.executable)


def _python_prefixes() -> tuple[str, ...]:
    """The interpreter the bridge runs on, and its standard library."""
    exe = Path(_python())
    return tuple(dict.fromkeys([str(exe.parent.parent), os.path.realpath(sys.base_prefix)]))


def _nondumpable() -> None:
    """Closes /proc/<runner>/environ (the API key) to non-root processes when nothing else does."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0
