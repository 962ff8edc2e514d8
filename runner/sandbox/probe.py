"""What this machine can give: bubblewrap with user, pid and net namespaces; Landlock's ABI.

Probed once per process by running `true` in the exact sandbox shape a run uses, so
"available" means "works here", not "installed" (AppArmor on Ubuntu 24.04 lets bwrap
start and then refuses the user namespace).
"""

from __future__ import annotations

import ctypes
import platform
import subprocess
from dataclasses import dataclass
from functools import cache

from runner.sandbox.bwrap import find_bwrap

MECHANISM = "bwrap"


@dataclass(frozen=True)
class Probe:
    available: bool
    mechanism: str | None
    bwrap: str | None
    reason: str | None  # why not, when not
    landlock_abi: int | None
    platform: str


@cache
def probe() -> Probe:
    system = platform.system().lower()
    landlock = landlock_abi()
    if system != "linux":
        # The seam for macOS is Seatbelt (sandbox-exec); not built yet (docs/sandbox.md).
        return Probe(False, None, None, f"no sandbox mechanism for {system} yet", landlock, system)
    bwrap = find_bwrap()
    if bwrap is None:
        return Probe(False, None, None, "bubblewrap (bwrap) is not installed", landlock, system)
    argv = [bwrap, "--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent", "--cap-drop", "ALL",
            "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "--", "true"]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=20, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError) as exc:
        return Probe(False, None, bwrap, f"bwrap cannot run: {exc}", landlock, system)
    if done.returncode != 0:
        why = (done.stderr.strip().splitlines() or ["exit code " + str(done.returncode)])[-1]
        return Probe(False, None, bwrap, f"bwrap cannot create namespaces here: {why}", landlock, system)
    return Probe(True, MECHANISM, bwrap, None, landlock, system)


def landlock_abi() -> int | None:
    """Landlock's ABI version via the syscall itself (no /sys/kernel/security/lsm here)."""
    if platform.system() != "Linux":
        return None
    numbers = {"x86_64": 444, "aarch64": 444, "riscv64": 444}
    nr = numbers.get(platform.machine())
    if nr is None:
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        version = libc.syscall(nr, None, ctypes.c_size_t(0), ctypes.c_uint32(1))  # LANDLOCK_CREATE_RULESET_VERSION
    except (OSError, AttributeError):
        return None
    return int(version) if version > 0 else None
