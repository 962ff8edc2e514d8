"""What a run's masker learns once the run's inputs are read: every secret the run was given, whatever its source.

The masker (runner/record/mask.py) is built with the run directory, from the process environment. Each kind of run
(run, resume, fork, replay) tells it the rest before anything it writes could hold one: `learn_files`, as soon as
the `--env-file` files are read, their secret-named values; `learn_secrets`, as soon as the policy is known (before
the settings, whose errors name the value they could not read, and before the first request, tool call or MCP
server), every value the trusted configuration hands out by name — what `bash.env.passthrough` passes to commands, an
MCP server's `env` and `headers` (their `${VAR}` expansions: an env file's value too) —, whatever the name (the
workflow chose to hand them out). Names every command gets anyway (PATH, HOME, the CI markers: runner/tools/env.py
ALLOWED) are not handed out; a value under 8 characters is never masked (runner/record/mask.py MIN_VALUE_CHARS).
Before the policy is read nothing is written but the task's own copy and, for an untrusted task's policy, a warning
of fixed text naming it.
"""

from __future__ import annotations

from collections.abc import Mapping

from runner.engine.recorder import Recording
from runner.mcp.config import ServerConfig
from runner.mcp.setup import mcp_servers
from runner.policy.model import Policy
from runner.run.options import RunOptions
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


def learn_files(rec: Recording, files: EnvFiles) -> EnvFiles:
    """The env files' secret-named values, masked from here on: called as soon as they are read."""
    rec.masker.learn(files.values)
    return files


def learn_secrets(rec: Recording, opts: RunOptions, files: EnvFiles, policy: Policy) -> dict[str, ServerConfig]:
    """The run's MCP servers, read once and checked (a bad config is exit 2 before anything starts; a review-only
    run starts none, whatever the policy names), and every secret the run was given learned: called as soon as the
    policy is known. `prepare` takes the servers (`Given.servers`)."""
    servers = {} if opts.fork_review else mcp_servers(rec, policy, opts.mcp_configs, files.environ())
    rec.masker.learn(files.values, handed(files, policy, servers))
    return servers
