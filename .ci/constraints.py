"""Print constraints.txt: agent-run's runtime dependencies, and theirs, pinned to the versions installed in
this environment (the one the test suite passed in), for the action to install with `-c constraints.txt`.

    .venv/bin/python .ci/constraints.py > constraints.txt

Only the runtime closure: the dev extra (pytest, ruff, ...) is not followed. Requirements whose marker is
false here (another platform or Python) are left out: a constraints file only limits what gets installed.
"""

from __future__ import annotations

import sys
from importlib.metadata import PackageNotFoundError, distribution

from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

HEADER = """\
# The versions agent-run's action installs (pip install -c constraints.txt): agent-run's runtime
# dependencies and theirs, as installed in the venv the test suite passed in. Generated; to regenerate
# after changing the dependencies in pyproject.toml (and running the tests in .venv):
#     .venv/bin/python .ci/constraints.py > constraints.txt
# tests/test_workflows.py checks that every runtime dependency of pyproject.toml is pinned here.
"""


def closure(root: str) -> dict[str, str]:
    """{canonical name: installed version} of everything `root` needs at run time, `root` excluded."""
    pinned: dict[str, str] = {}
    todo = [(root, frozenset[str]())]
    seen: set[tuple[str, frozenset[str]]] = set()
    while todo:
        name, extras = todo.pop()
        if (name, extras) in seen:
            continue
        seen.add((name, extras))
        dist = distribution(name)
        if canonicalize_name(name) != canonicalize_name(root):
            pinned[canonicalize_name(name)] = dist.version
        for text in dist.requires or []:
            req = Requirement(text)
            # A requirement is followed when its marker holds without an extra, or with one that was asked for.
            env = default_environment()
            if req.marker and not any(req.marker.evaluate({**env, "extra": e}) for e in (extras or {""})):
                continue
            try:
                distribution(req.name)
            except PackageNotFoundError:
                sys.exit(f"{req.name} (needed by {name}) is not installed here: install agent-run first")
            todo.append((req.name, frozenset(req.extras)))
    return pinned


def main() -> None:
    pins = closure("agent-run")
    sys.stdout.write(HEADER + "".join(f"{name}=={version}\n" for name, version in sorted(pins.items())))


if __name__ == "__main__":
    main()
