"""What a GitHub-hosted Ubuntu runner has that this machine has not, as stand-ins on PATH that record their calls:
passwordless `sudo`, `id` saying the runner's user is not root, `apt-get`, `apparmor_parser`, `sysctl`, and a `bwrap`
that behaves as Ubuntu 24.04's does under `kernel.apparmor_restrict_unprivileged_userns=1`: it refuses to create
user namespaces until an AppArmor profile granting `userns` to /usr/bin/bwrap is loaded (or the sysctl is 0), then
runs the real bubblewrap.

`Host(root, kind)`: kind "24.04" (restricted until the profile is loaded), "22.04" (not restricted: bwrap works at
once), "old-parser" (24.04's restriction, but apparmor_parser refuses the profile: only the sysctl lifts it), or
"no-sudo" (restricted, and sudo asks for a password). The scripts name /etc/apparmor.d; `rewrite` points a step's
script at a directory of the test's own instead, the one change made to the script under test.
"""

from __future__ import annotations

import os
from pathlib import Path

STAND_INS = {
    "sudo": """#!/bin/sh
echo "sudo $*" >> {log}
[ "{kind}" = no-sudo ] && {{ echo "sudo: a password is required" >&2; exit 1; }}
[ "$1" = -n ] && shift
exec "$@"
""",
    "id": """#!/bin/sh
if [ "$1" = -u ]; then echo 1001; else exec /usr/bin/id "$@"; fi
""",
    "apt-get": """#!/bin/sh
echo "apt-get $*" >> {log}
""",
    "apparmor_parser": """#!/bin/sh
echo "apparmor_parser $*" >> {log}
[ "{kind}" = old-parser ] && {{ echo "AppArmor parser error: Could not open 'abi/4.0'" >&2; exit 1; }}
[ "$1" = -r ] && grep -q 'profile agent-run-bwrap /usr/bin/bwrap' "$2" && grep -q 'userns,' "$2" || exit 1
touch {state}/userns-allowed
""",
    "sysctl": """#!/bin/sh
echo "sysctl $*" >> {log}
[ "$*" = "-q -w kernel.apparmor_restrict_unprivileged_userns=0" ] && touch {state}/userns-allowed
""",
    "bwrap": """#!/bin/sh
[ -e {state}/userns-allowed ] || {{ echo "bwrap: setting up uid map: Permission denied" >&2; exit 1; }}
exec {bwrap} "$@"
""",
}


class Host:
    def __init__(self, root: Path, kind: str = "24.04", bwrap: str = "/usr/bin/bwrap") -> None:
        self.bin, self.state, self.apparmor_d = root / "host-bin", root / "host-state", root / "apparmor.d"
        self.log = root / "host-calls.log"
        for d in (self.bin, self.state, self.apparmor_d):
            d.mkdir(parents=True, exist_ok=True)
        for name, text in STAND_INS.items():
            (self.bin / name).write_text(text.format(log=self.log, kind=kind, state=self.state, bwrap=bwrap))
            (self.bin / name).chmod(0o755)
        self.kind = kind
        self.reset()

    def reset(self) -> None:
        """A fresh runner (another job): nothing loaded, no calls."""
        self.log.write_text("")
        (self.state / "userns-allowed").unlink(missing_ok=True)
        for f in self.apparmor_d.iterdir():
            f.unlink()
        if self.kind == "22.04":
            (self.state / "userns-allowed").touch()

    def path(self, rest: str | None = None) -> str:
        return f"{self.bin}{os.pathsep}{rest if rest is not None else os.environ['PATH']}"

    def rewrite(self, script: str) -> str:
        return script.replace("/etc/apparmor.d", str(self.apparmor_d))

    def calls(self) -> list[str]:
        return [line.replace(str(self.apparmor_d), "/etc/apparmor.d") for line in self.log.read_text().splitlines()]

    @property
    def userns_allowed(self) -> bool:
        return (self.state / "userns-allowed").exists()
