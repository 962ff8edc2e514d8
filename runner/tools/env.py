"""The environment a command sees: an allow-list of what a build needs, never the runner's secrets.

Pure function over a mapping. A name reaches a command only when it is on `ALLOWED` (locale, terminal,
CI markers, toolchain locations) or the policy's `bash.env.passthrough` names it. Everything else —
`OPENAI_API_KEY`, `GITHUB_TOKEN`, `GITHUB_PAT`, `RUNNER_APIKEY`, `AWS_*`, and whatever a job invents — stays
with the runner. Not allowed unless the policy names them: the runner's file commands (`GITHUB_ENV`,
`GITHUB_PATH`, `GITHUB_OUTPUT`, `GITHUB_STATE`, `GITHUB_STEP_SUMMARY`: writing them changes later steps),
`RUNNER_TEMP` (it holds those files, and the action's own install of agent-run), `GITHUB_EVENT_PATH`.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping

from runner.record.integrity import AUDIT_KEY_ENV

ALLOWED = (
    # the shell, the user, locale, time zone, temporary files
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "LC_*", "TZ", "TMPDIR", "TMP", "TEMP",
    # terminal and colour
    "TERM", "COLORTERM", "NO_COLOR", "FORCE_COLOR", "CLICOLOR", "CLICOLOR_FORCE", "PY_COLORS", "COLUMNS", "LINES",
    # CI markers: what ran this job, on which commit (GitHub Actions, GitLab CI)
    "CI", "GITHUB_ACTIONS", "GITHUB_WORKSPACE", "GITHUB_REPOSITORY", "GITHUB_SHA", "GITHUB_REF", "GITHUB_REF_NAME",
    "GITHUB_HEAD_REF", "GITHUB_BASE_REF", "GITHUB_RUN_ID", "GITHUB_RUN_NUMBER", "GITHUB_RUN_ATTEMPT", "GITHUB_JOB",
    "GITHUB_WORKFLOW", "GITHUB_EVENT_NAME", "GITHUB_SERVER_URL", "RUNNER_OS", "RUNNER_ARCH",
    "GITLAB_CI", "CI_PROJECT_DIR", "CI_COMMIT_SHA", "CI_COMMIT_REF_NAME", "CI_PIPELINE_ID", "CI_JOB_ID",
    "CI_JOB_NAME", "CI_DEFAULT_BRANCH",
    # toolchain locations
    "VIRTUAL_ENV", "CONDA_PREFIX", "PYTHONPATH", "PYTHONIOENCODING", "PYTHONUTF8", "PIP_CACHE_DIR",
    "UV_CACHE_DIR", "JAVA_HOME", "JAVA_HOME_*", "GRADLE_USER_HOME", "MAVEN_HOME", "M2_HOME", "GOROOT",
    "GOPATH", "GOCACHE", "GOMODCACHE", "CARGO_HOME", "RUSTUP_HOME", "RUSTUP_TOOLCHAIN", "NODE_PATH", "NVM_DIR",
    "PNPM_HOME", "DOTNET_ROOT", "ANDROID_HOME", "ANDROID_SDK_ROOT", "XDG_CACHE_HOME", "XDG_CONFIG_HOME",
    "XDG_DATA_HOME", "PKG_CONFIG_PATH", "LD_LIBRARY_PATH", "CC", "CXX",
)


def _any(name: str, patterns: tuple[str, ...] | list[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


def scrubbed_env(environ: Mapping[str, str], passthrough: list[str] | None = None) -> dict[str, str]:
    """The names on `ALLOWED`, plus whatever `passthrough` names (globs allowed); never the audit key, which
    would let a command re-chain the log it is recorded in (runner/record/integrity.py)."""
    named = (*ALLOWED, *(passthrough or []))
    return {name: value for name, value in environ.items() if _any(name, named) and name != AUDIT_KEY_ENV}


def handed_out(environ: Mapping[str, str], names: list[str] | tuple[str, ...] | None) -> dict[str, str]:
    """What `names` (a passthrough's globs, an MCP server's variables) hand out beyond `ALLOWED`, which every
    command gets anyway (the shell's, the locale's, the CI markers, the toolchains'): the values the workflow chose
    to give away, each a secret whatever its name (runner/run/secrets.py)."""
    named = tuple(names or ())
    return {name: value for name, value in environ.items() if _any(name, named) and not _any(name, ALLOWED)}
