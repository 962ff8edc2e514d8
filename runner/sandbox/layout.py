"""Which paths a sandboxed process sees, and how. Pure over its inputs (plus `exists`).

Writable: the workspace and the run's scratch dir (HOME, TMPDIR). Read-only: system
paths, toolchains on PATH, the paths the policy lets the agent read outside the
workspace, and inside the workspace the whole `.git`, the runs directory and the
policy files. Not visible: everything else (the real home, /root, other users,
the runner's own private dir). Secrets under a visible path are masked.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from wcmatch import glob as wglob

from runner.policy.model import Rule

SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/sys",
               "/opt/hostedtoolcache", "/var/lib/ca-certificates", "/nix/store")
# Toolchain homes under $HOME that are safe to show read-only (caches and installs, not credentials).
HOME_TOOLCHAINS = (".cargo", ".rustup", ".npm", ".nvm", ".pyenv", ".cache/pip", ".cache/uv", ".local/bin",
                   ".local/lib", ".local/share/pnpm", ".m2/repository", ".gradle/caches", "go", ".bun", ".deno",
                   ".sdkman", ".volta", ".rbenv", ".dotnet")
# Never visible, even under a mounted toolchain home or a policy-readable tree.
HOME_SECRETS = (".ssh", ".aws", ".azure", ".config/gcloud", ".config/gh", ".docker", ".kube", ".gnupg", ".netrc",
                ".git-credentials", ".config/git/credentials", ".npmrc", ".pypirc", ".cargo/credentials",
                ".cargo/credentials.toml", ".cargo/config.toml", ".cargo/config",
                ".m2/settings.xml", ".gradle/gradle.properties", ".config/hub", ".password-store")
SYSTEM_SECRETS = ("/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-", "/etc/ssl/private",
                  "/etc/sudoers", "/etc/sudoers.d")
TOOLCHAIN_ENV = {"CARGO_HOME": ".cargo", "RUSTUP_HOME": ".rustup", "PYENV_ROOT": ".pyenv", "NVM_DIR": ".nvm"}


@dataclass(frozen=True)
class Mount:
    kind: str  # "ro" | "rw" | "tmpfs" | "mask-file" | "symlink"
    dest: str
    src: str = ""


@dataclass
class Layout:
    mounts: list[Mount] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)  # set inside (HOME, TMPDIR, toolchain homes)
    chdir: str = "/"


@dataclass(frozen=True)
class LayoutInput:
    workspace: Path
    scratch: Path  # HOME and TMPDIR live here, writable, kept for the run
    protected: tuple[Path, ...] = ()  # read-only inside the workspace (runs dir, policy files)
    readable: tuple[Path, ...] = ()  # extra read-only (policy fs: reads, sandbox.readOnly, the run dir)
    writable: tuple[Path, ...] = ()  # extra writable (policy fs: edits, sandbox.writable)
    environ: Mapping[str, str] = field(default_factory=dict)
    python_prefixes: tuple[str, ...] = ()  # the runner's own interpreter, for the network bridge
    workspace_writable: bool = True
    # Files bound over what the rest shows (sandbox/credmounts.py: sanitized git configs, hidden credentials).
    overlays: tuple[Mount, ...] = ()


def build_layout(inp: LayoutInput, exists: Callable[[str], bool] = os.path.lexists,
                 is_symlink: Callable[[str], bool] = os.path.islink,
                 readlink: Callable[[str], str] = os.readlink, is_dir: Callable[[str], bool] = os.path.isdir) -> Layout:
    home = inp.environ.get("HOME") or "/root"
    out = Layout(chdir=str(inp.workspace))
    ro: list[str] = []
    for extra in inp.readable:
        ro.append(str(extra))
    for d in SYSTEM_DIRS:
        if not exists(d):
            continue
        if is_symlink(d) and d.count("/") == 1:
            out.mounts.append(Mount("symlink", d, readlink(d)))  # /bin -> usr/bin, as on the host
        else:
            ro.append(d)
    workspace = str(inp.workspace)
    ro.extend(_toolchain_roots(inp.environ, home, workspace))
    # What the runner itself derives never holds the workspace (its siblings are another job's files);
    # the system dirs and what trusted configuration names explicitly are taken as they are.
    ro.extend(p for p in inp.python_prefixes if not _inside(workspace, p))
    for path in _dedupe(ro):
        if exists(path) and not _inside(path, workspace):
            out.mounts.append(Mount("ro", path, path))
    for path in _dedupe(str(p) for p in inp.writable):
        # Inside a writable workspace a second rw mount adds nothing but could re-open a protected path
        # below it (a workspace symlink `data -> .git/hooks` named in sandbox.writable).
        if exists(path) and not (inp.workspace_writable and _inside(path, workspace)):
            out.mounts.append(Mount("rw", path, path))
    # A private /tmp per call; the run's scratch (HOME, TMPDIR) persists across calls.
    out.mounts.append(Mount("tmpfs", "/tmp"))
    out.mounts.append(Mount("tmpfs", "/var/tmp"))
    out.mounts.append(Mount("rw", str(inp.scratch), str(inp.scratch)))
    out.mounts.append(Mount("rw" if inp.workspace_writable else "ro", str(inp.workspace), str(inp.workspace)))
    git = inp.workspace / ".git"
    for shielded in (git, *inp.protected):
        if shielded != git and shielded.is_relative_to(git):
            continue  # the whole .git is read-only already
        if exists(str(shielded)) and shielded.is_relative_to(inp.workspace):
            out.mounts.append(Mount("ro", str(shielded), str(shielded)))
    # Parents before children, whatever listed them (a readable /tmp/data after the private /tmp,
    # the workspace's .git after the workspace); at one path the later entry wins.
    out.mounts.sort(key=lambda m: (m.kind != "symlink", len(Path(m.dest).parts)))
    out.mounts.extend(inp.overlays)  # files, each deeper than the mount that shows it: after it
    visible = [m.dest for m in out.mounts if m.kind in ("ro", "rw")]
    for secret in (*(f"{home}/{s}" for s in HOME_SECRETS), *SYSTEM_SECRETS, *_runner_secrets(inp.environ)):
        if exists(secret) and any(_inside(secret, v) for v in visible):
            out.mounts.append(Mount("tmpfs" if is_dir(secret) else "mask-file", secret))
    out.env = {"HOME": str(inp.scratch / "home"), "TMPDIR": str(inp.scratch / "tmp"),
               "TMP": str(inp.scratch / "tmp"), "TEMP": str(inp.scratch / "tmp")}
    for var, rel in TOOLCHAIN_ENV.items():
        if var not in inp.environ and exists(f"{home}/{rel}"):
            out.env[var] = f"{home}/{rel}"  # HOME moves; rustup, cargo and pyenv must still find theirs
    return out


def shows(layout: Layout, path: str) -> bool:
    """Whether `path` is inside the sandbox as on the host: the deepest mount holding it is a bind (a tmpfs
    there, /tmp or a masked secret, is an empty directory instead)."""
    path = os.path.normpath(path)
    holding = [m for m in layout.mounts if _inside(path, m.dest)]
    if not holding:
        return False
    deepest = max(len(Path(m.dest).parts) for m in holding)
    return [m for m in holding if len(Path(m.dest).parts) == deepest][-1].kind in ("ro", "rw")


def read_only_mount(layout: Layout, path: str) -> str | None:
    """The read-only mount that shows `path` inside (its destination), or None: the deepest mount holding it is
    writable, a tmpfs, or there is none (a masked file is read-only too). Where a write refused with EROFS was
    refused (runner/tools/erofs.py)."""
    path = os.path.normpath(path)
    holding = [m for m in layout.mounts if m.kind in ("ro", "rw", "tmpfs", "mask-file") and _inside(path, m.dest)]
    if not holding:
        return None
    deepest = max(len(Path(m.dest).parts) for m in holding)
    mount = [m for m in holding if len(Path(m.dest).parts) == deepest][-1]
    return mount.dest if mount.kind in ("ro", "mask-file") else None


def _toolchain_roots(environ: Mapping[str, str], home: str, workspace: str = "") -> list[str]:
    roots = [f"{home}/{rel}" for rel in HOME_TOOLCHAINS]
    for var in ("VIRTUAL_ENV", "CARGO_HOME", "RUSTUP_HOME", "PYENV_ROOT", "NVM_DIR", "GOROOT", "JAVA_HOME",
                "RUNNER_TOOL_CACHE"):
        value = os.path.normpath(environ.get(var) or "/")
        if value != "/" and not _inside(home, value):
            roots.append(value)
    for entry in environ.get("PATH", "").split(os.pathsep):
        entry = os.path.normpath(entry) if entry.startswith("/") else ""
        if entry and not any(_inside(entry, d) for d in ("/usr", "/bin", "/sbin")):
            roots.append(toolchain_root(entry, home, workspace))
    # A toolchain that holds the workspace (`~/go` for a GOPATH checkout) would show its siblings too.
    return [r for r in roots if not (workspace and r and _inside(workspace, r))]


# Shared trees under $HOME: a PATH entry inside one shows only itself, never the whole tree.
_SHARED_HOME_DIRS = (".local", ".config", ".cache", ".var", "bin")


def toolchain_root(path: str, home: str, workspace: str = "") -> str:
    """The install a PATH entry belongs to: `~/.pyenv/shims` needs all of `~/.pyenv`, while
    `~/.local/bin` is only itself (not `~/.local/share` and its keyrings). "" when nothing.

    Never a directory holding `workspace`: on a GitHub runner `~/work/r/r/.venv/bin` would otherwise
    give `~/work`, and with it `~/work/_temp` (the step scripts). An entry inside the workspace gives ""
    (the workspace shows it already)."""
    if path == "/" or _inside(home, path):
        return ""  # `/`, `/root` or the home itself on PATH: never mount what holds the secrets
    if workspace and (_inside(path, workspace) or _inside(workspace, path)):
        return ""
    root = _root_of(path, home)
    if workspace and _inside(workspace, root):
        return path  # the entry alone, not the tree it shares with the workspace
    return root


def _root_of(path: str, home: str) -> str:
    for base in (home, "/opt"):
        if _inside(path, base):
            first = os.path.relpath(path, base).split(os.sep)[0]
            return path if base == home and first in _SHARED_HOME_DIRS else os.path.join(base, first)
    parent = os.path.dirname(path)
    return parent if os.path.basename(path) in ("bin", "sbin", "shims") and parent != "/" else path


# Credential files a toolchain finds through its environment rather than under $HOME (CARGO_HOME=/usr/local/cargo).
TOOLCHAIN_SECRETS = {"CARGO_HOME": ("credentials", "credentials.toml", "config.toml", "config"),
                     "NPM_CONFIG_USERCONFIG": ("",), "npm_config_userconfig": ("",), "NETRC": ("",),
                     "DOCKER_CONFIG": ("config.json",), "GH_CONFIG_DIR": ("hosts.yml",)}


def _runner_secrets(environ: Mapping[str, str]) -> list[str]:
    out = [os.path.join(environ[var], name) if name else environ[var]
           for var, names in TOOLCHAIN_SECRETS.items() if environ.get(var, "").startswith("/") for name in names]
    if environ.get("RUNNER_TEMP"):
        out.append(os.path.join(environ["RUNNER_TEMP"], "_runner_file_commands"))
    for var in ("GITHUB_ENV", "GITHUB_OUTPUT", "GITHUB_PATH", "GITHUB_STATE", "GITHUB_STEP_SUMMARY"):
        if environ.get(var):
            out.append(environ[var])
    return out


def _inside(path: str, base: str) -> bool:
    return path == base or path.startswith(base.rstrip("/") + "/")


def _dedupe(paths: Iterable[str]) -> list[str]:
    """Each path once; a path inside another listed one is dropped (its parent shows it)."""
    unique = sorted({os.path.normpath(p) for p in paths if p})
    out: list[str] = []
    for p in unique:
        if not any(_inside(p, kept) for kept in out):
            out.append(p)
    return out


def policy_paths(rules: Iterable[Rule], domain: str, workspace: Path) -> list[Path]:
    """The fixed directory above each `fs:` allow rule of `domain`: `fs:/data/**` -> /data.

    The last rule for a domain decides, as in the policy; a path is shown when some allow
    rule's literal prefix names it (deny and ask rules still decide the tools' own calls)."""
    out = []
    for rule in rules:
        if rule.decision != "allow" or rule.domain not in (domain, "*"):
            continue
        raw = rule.pattern.raw
        if not raw.startswith("fs:/"):
            continue
        literal = _literal_prefix(raw[3:])
        if literal and not Path(literal).is_relative_to(workspace):
            out.append(Path(literal))
    return out


def _literal_prefix(pattern: str) -> str:
    parts = []
    for part in pattern.split("/"):
        if wglob.is_magic(part, flags=wglob.GLOBSTAR | wglob.BRACE):
            break
        parts.append(part)
    prefix = "/".join(parts) or "/"
    return prefix if prefix.startswith("/") else "/" + prefix
