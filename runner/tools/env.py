"""The environment a command sees: an allowlist, never the runner's secrets.

Pure function over a mapping. `OPENAI_API_KEY`, `GITHUB_TOKEN`, `AWS_*`, `*_TOKEN`,
`*_SECRET`, `*_KEY`, `*PASSWORD*` never reach a command unless the policy's
`bash.env.passthrough` names them.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping

ALLOWED = ("PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "LC_*", "TERM", "TZ", "TMPDIR",
           "TMP", "TEMP", "CI", "GITHUB_*", "RUNNER_*", "VIRTUAL_ENV", "PYTHONPATH", "NODE_PATH", "GOPATH",
           "GOCACHE", "CARGO_HOME", "RUSTUP_HOME", "JAVA_HOME", "NO_COLOR", "FORCE_COLOR", "COLUMNS")
SECRET = ("OPENAI_*", "AGENT_RUN_*", "AWS_*", "GITHUB_TOKEN", "ACTIONS_RUNTIME_TOKEN", "ACTIONS_ID_TOKEN_*",
          "*_TOKEN", "*_TOKEN_*", "*_SECRET", "*_SECRET_*", "*_KEY", "*_KEY_*", "*PASSWORD*", "*PASSWD*",
          "*CREDENTIAL*")


def _any(name: str, patterns: tuple[str, ...] | list[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


def scrubbed_env(environ: Mapping[str, str], passthrough: list[str] | None = None) -> dict[str, str]:
    """Allowed names minus secret-looking ones, plus whatever `passthrough` names (globs allowed)."""
    named = list(passthrough or [])
    out = {}
    for name, value in environ.items():
        if _any(name, named) or (_any(name, ALLOWED) and not _any(name, SECRET)):
            out[name] = value
    return out
