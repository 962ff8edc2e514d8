"""What a policy decides: (domain, target) pairs built from what a tool receives.

Pure functions over a workspace path; the tools and `policy explain` share them,
so what explain prints is exactly what a run decides.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from runner.policy.model import Target
from runner.policy.shell import analyze


def resolve_path(workspace: Path, raw: str) -> Path:
    """Relative to the workspace; `~` expanded; `..` and symlinks resolved.

    Raises UnresolvablePath for a symlink loop (and other resolution failures)."""
    p = Path(os.path.expanduser(raw))
    if not p.is_absolute():
        p = workspace / p
    try:
        return p.resolve(strict=False)
    except (RuntimeError, OSError) as exc:  # RuntimeError: a symlink loop on Python < 3.13
        raise UnresolvablePath(f"cannot resolve {raw!r}: {exc}") from None


class UnresolvablePath(ValueError):
    pass


def path_target(workspace: Path, path: Path) -> str:
    if path.is_relative_to(workspace):
        rel = path.relative_to(workspace).as_posix()
        return f"workspace:{rel or '.'}"
    return f"fs:{path.as_posix()}"


def target_path(workspace: Path, target: str) -> Path | None:
    """The file a `workspace:` or `fs:` target names; None for other schemes."""
    scheme, _, rest = target.partition(":")
    if scheme == "workspace":
        return workspace if rest == "." else workspace / rest
    if scheme == "fs":
        return Path(rest)
    return None


def file_targets(domain: str, workspace: Path, *raw_paths: str) -> list[Target]:
    out = []
    for raw in raw_paths:
        try:
            out.append(Target(domain, path_target(workspace, resolve_path(workspace, raw))))
        except UnresolvablePath as exc:
            # Where it leads is unknown: decided as the path as written, and never below ask.
            literal = Path(os.path.abspath(os.path.join(workspace, os.path.expanduser(raw))))
            out.append(Target(domain, path_target(workspace, literal), floor="ask", note=str(exc)))
    return out


def shell_targets(workspace: Path, command: str) -> list[Target]:
    """Every simple command (bash), every file a redirection or tee writes (edit), every file
    read with `<` and directory entered with cd (read). Opaque parts floor the call at ask."""
    found = analyze(command)
    out = [Target("bash", f"shell:{c}") for c in found.commands]
    # After `cd DIR`, a relative path may be relative to DIR: decide it against the workspace and
    # against every directory the command enters (strictest wins), never against the workspace alone.
    bases = [workspace]
    for d in found.dirs:
        with contextlib.suppress(UnresolvablePath):
            bases.append(resolve_path(workspace, d))
    for domain, paths in (("edit", found.writes), ("read", found.reads)):
        for raw in paths:
            for base in ([workspace] if os.path.isabs(os.path.expanduser(raw)) else dict.fromkeys(bases)):
                out += file_targets(domain, base, raw) if base == workspace else _under(domain, workspace, base, raw)
    out += file_targets("read", workspace, *found.dirs)
    if found.opaque:
        whole = " ".join(command.split())
        out.append(Target("bash", f"shell:{whole}", floor="ask", note="; ".join(dict.fromkeys(found.opaque))))
    return out


def _under(domain: str, workspace: Path, base: Path, raw: str) -> list[Target]:
    """`raw` relative to `base` (a directory entered with cd), as a target of the workspace."""
    return file_targets(domain, workspace, str(base / raw))


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


def network_target(value: str) -> Target:
    """`host:port`, `net:host:port`, or a bare host (port 443): what the egress proxy decides."""
    text = value.strip().lower()
    text = text[len("net:"):] if text.startswith("net:") else text
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else "443"
        host = f"[{host}]"
    else:
        host, _, port = text.rpartition(":") if ":" in text else (text, "", "443")
    return Target("network", f"net:{host.rstrip('.')}:{port or '443'}")


def targets_for(domain: str, value: str, workspace: Path) -> list[Target]:
    """What a tool of `domain` receiving `value` is decided on (used by `policy explain`)."""
    if domain in ("read", "edit"):
        return file_targets(domain, workspace, value)
    if domain == "bash":
        return shell_targets(workspace, value)
    if domain == "web_fetch":
        try:
            return [Target(domain, f"url:{normalize_url(value)}")]
        except ValueError as exc:  # e.g. a port out of range
            return [Target(domain, f"url:{value.strip()}", floor="ask", note=f"invalid URL: {exc}")]
    if domain == "web_search":
        return [Target(domain, f"query:{value}")]
    if domain == "mcp":
        return [Target(domain, value if value.startswith("mcp:") else f"mcp:{value}")]
    if domain == "task":
        return [Target(domain, value if value.startswith("agent:") else f"agent:{value}")]
    if domain == "network":
        return [network_target(value)]
    raise ValueError(f"unknown domain {domain!r}")
