"""What a run's masker learns once the run's inputs are read: every secret the run was given, whatever its source.

The masker (runner/record/mask.py) is built with the run directory, from the process environment. `learn_secrets`,
called once by `prepare` (the one path for run, resume, fork and replay) before the first request, tool call or MCP
server, tells it the rest: the secret-named values of the `--env-file` files, and every value the trusted
configuration hands out by name — what `bash.env.passthrough` passes to commands, an MCP server's `env` and
`headers` (their `${VAR}` expansions: an env file's value too) —, whatever the name (the workflow chose to hand them
out). Names every command gets anyway (PATH, HOME, the CI markers: runner/tools/env.py ALLOWED) are not handed out;
a value under 8 characters is never masked (runner/record/mask.py MIN_VALUE_CHARS).
"""

from __future__ import annotations

from collections.abc import Mapping

from runner.engine.recorder import Recording
from runner.mcp.config import ServerConfig
from runner.policy.model import Policy
from runner.tools.env import handed_out
from runner.workspace.trust import EnvFiles


def handed(files: EnvFiles, policy: Policy, servers: Mapping[str, ServerConfig]) -> dict[str, str]:
    """Name -> value for everything the configuration hands out: the passthrough's variables, then each MCP
    server's `env` (by its variable's name) and `headers` (by the header's name: its last word, the credential of
    `Bearer …` or `Basic …`)."""
    passthrough = ((policy.sections.get("bash") or {}).get("env") or {}).get("passthrough")
    out = handed_out(files.environ(), passthrough)
    for config in servers.values():
        out.update(handed_out(config.env, list(config.env)))
        out.update({header: value.split()[-1] for header, value in config.headers.items() if value.split()})
    return out


def learn_secrets(rec: Recording, files: EnvFiles, policy: Policy, servers: Mapping[str, ServerConfig]) -> None:
    rec.masker.learn(files.values, handed(files, policy, servers))
