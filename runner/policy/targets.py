"""What a policy decides: (domain, target) pairs built from what a tool receives.

Pure functions over a workspace path; the tools and `policy explain` share them,
so what explain prints is exactly what a run decides.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from runner.policy.model import Target
from runner.policy.shell import analyze


def resolve_path(workspace: Path, raw: str) -> Path:
    """Relative to the workspace; `~` expanded; `..` and symlinks resolved."""
    p = Path(os.path.expanduser(raw))
    if not p.is_absolute():
        p = workspace / p
    return p.resolve(strict=False)


def path_target(workspace: Path, path: Path) -> str:
    if path.is_relative_to(workspace):
        rel = path.relative_to(workspace).as_posix()
        return f"workspace:{rel or '.'}"
    return f"fs:{path.as_posix()}"


def file_targets(domain: str, workspace: Path, *raw_paths: str) -> list[Target]:
    return [Target(domain, path_target(workspace, resolve_path(workspace, raw))) for raw in raw_paths]


def shell_targets(workspace: Path, command: str) -> list[Target]:
    """Every simple command (bash), every file a redirection or tee writes (edit), every file
    read with `<` and directory entered with cd (read). Opaque parts floor the call at ask."""
    found = analyze(command)
    out = [Target("bash", f"shell:{c}") for c in found.commands]
    out += file_targets("edit", workspace, *found.writes)
    out += file_targets("read", workspace, *found.reads, *found.dirs)
    if found.opaque:
        whole = " ".join(command.split())
        out.append(Target("bash", f"shell:{whole}", floor="ask", note="; ".join(dict.fromkeys(found.opaque))))
    return out


def normalize_url(url: str) -> str:
    """Lower-case scheme and host, default port dropped, empty path as `/`, fragment dropped."""
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    port = parts.port
    netloc = host if port is None or (scheme, port) in (("http", 80), ("https", 443)) else f"{host}:{port}"
    if parts.username:
        netloc = f"{parts.username}@{netloc}"
    return urlunsplit((scheme, netloc, parts.path or "/", parts.query, ""))


def targets_for(domain: str, value: str, workspace: Path) -> list[Target]:
    """What a tool of `domain` receiving `value` is decided on (used by `policy explain`)."""
    if domain in ("read", "edit"):
        return file_targets(domain, workspace, value)
    if domain == "bash":
        return shell_targets(workspace, value)
    if domain == "web_fetch":
        return [Target(domain, f"url:{normalize_url(value)}")]
    if domain == "web_search":
        return [Target(domain, f"query:{value}")]
    if domain == "mcp":
        return [Target(domain, value if value.startswith("mcp:") else f"mcp:{value}")]
    if domain == "task":
        return [Target(domain, value if value.startswith("agent:") else f"agent:{value}")]
    raise ValueError(f"unknown domain {domain!r}")
