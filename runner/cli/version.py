"""The installed version of agent-run, as `agent-run --version` prints it.

The build writes it (`_version.py`, git-ignored: hatch's version hook, `[tool.hatch.build.hooks.version]` in
pyproject.toml, for wheels and editable installs alike); where that file is missing (a checkout put on the path
by hand) the installed distribution's metadata answers. Neither click nor importlib.metadata is imported when
the file is there: `--version` is answered before either would be.
"""

from __future__ import annotations

import importlib

PROG = "agent-run"


def version() -> str:
    try:
        written = importlib.import_module("runner.cli._version")
    except ImportError:
        from importlib.metadata import version as installed

        return installed(PROG)
    return str(written.__version__)


def version_line() -> str:
    """click's `version_option` message, kept word for word."""
    return f"{PROG}, version {version()}"
