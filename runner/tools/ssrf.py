"""Which network addresses web_fetch and the sandbox's egress proxy may connect to.

A model told to fetch a URL must not reach the runner's own machine, the CI network
or a cloud metadata endpoint (which hands out credentials). Hosts are resolved here
and every address is checked, so a name resolving to a mix of public and private
addresses is refused whole; the caller then connects only to the addresses returned,
so a second lookup (DNS rebinding) cannot swap in an address that was never checked.
"""

from __future__ import annotations

import ipaddress
import socket

from runner.policy.targets import InvalidURL, canonical_host

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# Ordered: the first match names the reason, so specific ranges come before the ranges
# that contain them (the metadata address before the rest of link-local).
_V4_REFUSED = [
    ("0.0.0.0/32", "unspecified address"),
    ("0.0.0.0/8", "'this network' address"),  # connecting to 0.x reaches the local host on Linux
    ("127.0.0.0/8", "loopback address"),
    ("10.0.0.0/8", "private address"),
    ("172.16.0.0/12", "private address"),
    ("192.168.0.0/16", "private address"),
    ("100.64.0.0/10", "shared address space (carrier-grade NAT)"),
    ("169.254.169.254/32", "link-local address (cloud metadata endpoint)"),
    ("169.254.0.0/16", "link-local address"),
    ("192.0.0.0/24", "reserved address (IETF protocol assignments)"),
    ("192.0.2.0/24", "reserved address (documentation)"),
    ("198.51.100.0/24", "reserved address (documentation)"),
    ("203.0.113.0/24", "reserved address (documentation)"),
    ("198.18.0.0/15", "reserved address (benchmarking)"),
    ("224.0.0.0/4", "multicast address"),
    ("255.255.255.255/32", "broadcast address"),
    ("240.0.0.0/4", "reserved address"),
]
_V6_REFUSED = [
    ("::/128", "unspecified address"),
    ("::1/128", "loopback address"),
    ("fd00:ec2::254/128", "unique-local address (cloud metadata endpoint)"),
    ("fc00::/7", "unique-local address"),
    ("fe80::/10", "link-local address"),
    ("fec0::/10", "site-local address"),
    ("ff00::/8", "multicast address"),
    ("::/96", "reserved address (IPv4-compatible)"),
    ("100::/64", "reserved address (discard-only)"),
    ("2001:db8::/32", "reserved address (documentation)"),
]
_V4_NETS = [(ipaddress.ip_network(net), reason) for net, reason in _V4_REFUSED]
_V6_NETS = [(ipaddress.ip_network(net), reason) for net, reason in _V6_REFUSED]
# Refused even when the policy names the host exactly: link-local, and the metadata endpoints.
_NEVER = [ipaddress.ip_network(n) for n in ("169.254.0.0/16", "fe80::/10", "fd00:ec2::254/128")]
# IPv6 forms that carry an IPv4 address the traffic may end up at: judged by that address.
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


class AddressRefused(Exception):
    """A host resolved to an address web_fetch must not connect to."""

    def __init__(self, host: str, address: str, reason: str) -> None:
        shown = host if host == address else f"{host} ({address})"
        super().__init__(f"{shown} is refused: {reason}")
        self.host = host
        self.address = address
        self.reason = reason


class UnresolvableHost(Exception):
    pass


def check_address(ip: str | IPAddress) -> str | None:
    """Why `ip` must not be connected to, or None when it is a public address."""
    try:
        addr = ip if isinstance(ip, IPAddress) else ipaddress.ip_address(ip)
    except ValueError:
        return "not an IP address"
    if isinstance(addr, ipaddress.IPv6Address):
        if addr.scope_id:  # fe80::1%eth0: only link-local addresses carry a zone
            addr = ipaddress.IPv6Address(str(addr).split("%", 1)[0])
        embedded = _embedded_v4(addr)
        if embedded is not None:
            form, v4 = embedded
            inner = check_address(v4)
            return f"{form} form of {v4}, a {inner}" if inner else None
        nets = _V6_NETS
    else:
        nets = _V4_NETS
    for net, reason in nets:
        if addr in net:
            return reason
    # Whatever else the standard library knows is not globally routable (ranges added
    # to the IANA registries later, e.g. 2001::/23 sub-blocks).
    if not addr.is_global:
        return "reserved address"
    return None


def _embedded_v4(addr: ipaddress.IPv6Address) -> tuple[str, ipaddress.IPv4Address] | None:
    if addr.ipv4_mapped is not None:  # ::ffff:127.0.0.1 is 127.0.0.1 to a dual-stack socket
        return "IPv4-mapped", addr.ipv4_mapped
    if addr.sixtofour is not None:  # 2002:7f00:1::/48 is routed towards 127.0.0.1 by a 6to4 relay
        return "6to4", addr.sixtofour
    if addr.teredo is not None:
        return "Teredo", addr.teredo[1]
    if addr in _NAT64:  # a NAT64 gateway forwards 64:ff9b::a00:1 to 10.0.0.1
        return "NAT64", ipaddress.IPv4Address(int(addr) & 0xFFFFFFFF)
    return None


def resolve_and_check(host: str, port: int, allow_private: bool) -> list[str]:
    """The addresses `host` resolves to, each checked; raises AddressRefused for the first
    refused one (`allow_private`: only a link-local one), UnresolvableHost when it does not resolve.
    The egress proxy and web_fetch both connect only to the addresses returned (pinned).

    An IP literal is checked as it is, without a DNS lookup."""
    name = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not name:
        raise UnresolvableHost("the URL has no host")
    try:
        literal: IPAddress | None = ipaddress.ip_address(name)
    except ValueError:
        # The host as web_fetch's policy target has it (runner.policy.targets.canonical_host):
        # `2130706433`, `0x7f.1`, `0177.0.0.1` and `127。0。0。1` are 127.0.0.1 here too, and a name
        # is looked up in its IDNA form without a trailing dot, so the address decided is the one checked.
        try:
            name = canonical_host(name)
        except InvalidURL as exc:
            raise UnresolvableHost(f"cannot resolve {name}: {exc}") from None
        try:
            literal = ipaddress.ip_address(name.strip("[]"))
        except ValueError:
            literal = None
    if literal is not None:
        addresses = [str(literal)]
    else:
        try:
            infos = socket.getaddrinfo(name, port, type=socket.SOCK_STREAM)
        except (socket.gaierror, UnicodeError, OSError) as exc:
            raise UnresolvableHost(f"cannot resolve {name}: {getattr(exc, 'strerror', None) or exc}") from None
        addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
        if not addresses:
            raise UnresolvableHost(f"cannot resolve {name}: no addresses")
    for address in addresses:
        reason = check_address(address)
        # A rule naming a private or loopback host exactly may reach it; a link-local address (the cloud
        # metadata endpoint hands out credentials) is never reached, whatever the policy names.
        if reason and (not allow_private or link_local(address)):
            raise AddressRefused(name, address, reason)
    return addresses


def link_local(ip: str | IPAddress) -> bool:
    """Whether `ip` is link-local or a cloud metadata endpoint, in any form that carries one."""
    try:
        addr = ip if isinstance(ip, IPAddress) else ipaddress.ip_address(ip)
    except ValueError:
        return False
    if isinstance(addr, ipaddress.IPv6Address):
        addr = ipaddress.IPv6Address(str(addr).split("%", 1)[0])
        embedded = _embedded_v4(addr)
        if embedded is not None:
            addr = embedded[1]
    return any(addr in net for net in _NEVER)
