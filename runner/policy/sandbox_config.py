"""What the policy (and the trusted command line) ask of the sandbox. Pure functions.

`sandbox` section of a policy:
    {"mode": "required" | "auto" | "off",
     "network": "none" | "all" | {"allow": ["host", "*.host", "host:port"]},
     "readOnly": ["~/.m2", "/data/fixtures"],   # extra read-only mounts
     "writable": ["/var/cache/build"]}          # extra writable mounts

The mode comes from `--sandbox`, then `AGENT_RUN_SANDBOX` (the job environment is
trusted), then the policy, then `auto`. A workspace `.env` is never consulted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from runner.policy.match import compile_pattern
from runner.policy.model import Rule

MODES = ("required", "auto", "off")
NETWORK_SOURCE = "sandbox.network"
DEFAULT_PORTS = (80, 443)


class SandboxConfigError(ValueError):
    pass


@dataclass(frozen=True)
class SandboxConfig:
    mode: str = "auto"
    network: str = "none"  # "none" | "all" | "allow"
    allow: tuple[str, ...] = ()  # the allow-list as written (network == "allow")
    read_only: tuple[str, ...] = ()
    writable: tuple[str, ...] = ()

    def describe_network(self) -> str | dict[str, list[str]]:
        return {"allow": list(self.allow)} if self.network == "allow" else self.network


@dataclass(frozen=True)
class NetTarget:
    host: str
    port: int
    extra: dict[str, Any] = field(default_factory=dict)


def resolve_mode(flag: str | None, environ: Mapping[str, str], section: Mapping[str, Any]) -> str:
    """Flag > AGENT_RUN_SANDBOX > policy `sandbox.mode` > auto."""
    for source, value in (("--sandbox", flag), ("AGENT_RUN_SANDBOX", environ.get("AGENT_RUN_SANDBOX")),
                          ("policy sandbox.mode", section.get("mode"))):
        if value:
            if value not in MODES:
                raise SandboxConfigError(f"{source}: expected one of {', '.join(MODES)}, got {value!r}")
            return value
    return "auto"


def config_from(section: Mapping[str, Any], mode: str) -> SandboxConfig:
    network = section.get("network", "none")
    allow: tuple[str, ...] = ()
    if isinstance(network, Mapping):
        allow = tuple(str(h) for h in network.get("allow", []))
        for entry in allow:
            parse_allow_entry(entry)  # raises on a malformed entry
        network = "allow"
    elif network not in ("none", "all"):
        raise SandboxConfigError(f"sandbox.network: expected none, all or {{allow: [...]}}, got {network!r}")
    return SandboxConfig(mode=mode, network=network, allow=allow,
                         read_only=tuple(section.get("readOnly", [])), writable=tuple(section.get("writable", [])))


def parse_allow_entry(entry: str) -> tuple[str, tuple[str, ...]]:
    """`host`, `*.host`, `host:port`, `host:*`, `[v6]:port` -> (host pattern, port patterns)."""
    text = entry.strip().lower()
    if not text:
        raise SandboxConfigError("sandbox.network.allow: an empty host")
    if "/" in text or any(c.isspace() for c in text):
        raise SandboxConfigError(f"sandbox.network.allow: {entry!r} is not a host (write host, *.host or host:port)")
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
        host = f"[{host}]"
    elif text.count(":") > 1:
        host, port = f"[{text}]", ""  # a bare IPv6 address: targets write it in brackets
    elif text.count(":") == 1:
        host, port = text.split(":")
    else:
        host, port = text, ""
    if "/" in host or not host:
        raise SandboxConfigError(f"sandbox.network.allow: {entry!r} is not a host (write host, *.host or host:port)")
    if port and port != "*" and not (port.isdigit() and 0 < int(port) < 65536):
        raise SandboxConfigError(f"sandbox.network.allow: bad port in {entry!r}")
    ports = (port,) if port else tuple(str(p) for p in DEFAULT_PORTS)
    return host.rstrip("."), ports


def net_target(host: str, port: int) -> str:
    """The `network` domain's target: what a CONNECT proxy sees, host and port."""
    host = host.lower().rstrip(".")
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"net:{host}:{port}"


def network_rules(config: SandboxConfig, source: str = NETWORK_SOURCE) -> list[Rule]:
    """The allow-list as `network` allow rules (placed after the policy's own rules). `source`: where the
    list was written (an MCP server's own list names its server)."""
    rules = []
    for i, entry in enumerate(config.allow):
        host, ports = parse_allow_entry(entry)
        for port in ports:
            literal = host.replace("[", "\\[").replace("]", "\\]")  # an IPv6 literal is not a glob class
            rules.append(Rule("network", compile_pattern(f"net:{literal}:{port}"), "allow", source, i))
    return rules
