"""The address guard of web_fetch: which addresses are refused, and resolution of host names.

Public addresses are only ever checked with check_address: nothing here resolves or
connects to a host off this machine."""

from __future__ import annotations

import ipaddress

import pytest

from runner.tools.ssrf import AddressRefused, UnresolvableHost, check_address, resolve_and_check

ALLOWED = [
    "8.8.8.8", "1.1.1.1", "93.184.215.14", "151.101.1.69", "100.63.255.255", "100.128.0.1", "172.15.255.255",
    "172.32.0.1", "192.167.255.255", "169.253.255.255", "223.255.255.255",
    "2606:4700::1", "2001:4860:4860::8888", "2a00:1450:4001:80b::200e",
    "::ffff:8.8.8.8",  # IPv4-mapped form of a public address
    "64:ff9b::808:808",  # NAT64 form of a public address
]

REFUSED = [
    ("127.0.0.1", "loopback"),
    ("127.255.255.254", "loopback"),
    ("10.0.0.1", "private"),
    ("172.16.0.1", "private"),
    ("172.31.255.255", "private"),
    ("192.168.1.1", "private"),
    ("100.64.0.1", "shared address space"),
    ("100.127.255.255", "shared address space"),
    ("100.100.100.200", "shared address space"),  # Alibaba Cloud's metadata endpoint
    ("169.254.169.254", "cloud metadata"),
    ("169.254.0.1", "link-local"),
    ("0.0.0.0", "unspecified"),
    ("0.1.2.3", "this network"),
    ("224.0.0.1", "multicast"),
    ("239.255.255.250", "multicast"),
    ("255.255.255.255", "broadcast"),
    ("240.0.0.1", "reserved"),
    ("192.0.2.1", "documentation"),
    ("198.18.0.1", "benchmarking"),
    ("192.0.0.8", "reserved"),
    ("::1", "loopback"),
    ("::", "unspecified"),
    ("::ffff:127.0.0.1", "IPv4-mapped form of 127.0.0.1, a loopback"),
    ("::ffff:10.0.0.1", "IPv4-mapped form of 10.0.0.1, a private"),
    ("::ffff:169.254.169.254", "cloud metadata"),
    ("fc00::1", "unique-local"),
    ("fd12:3456:789a::1", "unique-local"),
    ("fd00:ec2::254", "cloud metadata"),  # AWS's IPv6 metadata endpoint
    ("fe80::1", "link-local"),
    ("fe80::1%eth0", "link-local"),
    ("fec0::1", "site-local"),
    ("ff02::1", "multicast"),
    ("::127.0.0.1", "IPv4-compatible"),
    ("64:ff9b::a00:1", "NAT64 form of 10.0.0.1"),
    ("2002:7f00:1::1", "6to4 form of 127.0.0.1"),
    ("2001:db8::1", "documentation"),
    ("100::1", "discard"),
]


@pytest.mark.parametrize("address", ALLOWED)
def test_public_addresses_are_allowed(address):
    assert check_address(address) is None


@pytest.mark.parametrize(("address", "reason"), REFUSED)
def test_refused_addresses_name_their_reason(address, reason):
    got = check_address(address)
    assert got is not None and reason in got, got


def test_takes_ipaddress_objects_too():
    assert check_address(ipaddress.ip_address("10.1.2.3")) == "private address"
    assert check_address(ipaddress.ip_address("8.8.4.4")) is None


def test_a_non_address_is_refused():
    assert check_address("example.com") == "not an IP address"


# --- resolve_and_check (loopback and literals only) ------------------------------


def test_ip_literal_is_checked_without_lookup():
    with pytest.raises(AddressRefused) as info:
        resolve_and_check("10.0.0.1", 80, allow_private=False)
    assert (info.value.address, info.value.reason) == ("10.0.0.1", "private address")
    assert str(info.value) == "10.0.0.1 is refused: private address"


def test_bracketed_ipv6_literal():
    with pytest.raises(AddressRefused) as info:
        resolve_and_check("[::1]", 80, allow_private=False)
    assert info.value.reason == "loopback address"
    assert resolve_and_check("[::1]", 80, allow_private=True) == ["::1"]


def test_public_literal_passes_and_is_returned_as_is():
    # A literal is never looked up, so this does not touch the network.
    assert resolve_and_check("8.8.8.8", 443, allow_private=False) == ["8.8.8.8"]
    assert resolve_and_check("2606:4700::1", 443, allow_private=False) == ["2606:4700::1"]


def test_localhost_name_is_resolved_and_refused():
    with pytest.raises(AddressRefused) as info:
        resolve_and_check("localhost", 80, allow_private=False)
    assert info.value.host == "localhost"
    assert info.value.reason == "loopback address"
    assert str(info.value).startswith("localhost (")


def test_allow_private_returns_every_address():
    addresses = resolve_and_check("localhost", 80, allow_private=True)
    assert "127.0.0.1" in addresses or "::1" in addresses
    assert len(addresses) == len(set(addresses))


@pytest.mark.parametrize("host", ["127.1", "2130706433", "0x7f.0.0.1"])
def test_numeric_forms_the_resolver_accepts_are_checked_as_resolved(host):
    # Not literals to `ipaddress`, but inet_aton reads them as 127.0.0.1 (no DNS query).
    with pytest.raises(AddressRefused) as info:
        resolve_and_check(host, 80, allow_private=False)
    assert info.value.address == "127.0.0.1"


def test_empty_host_is_unresolvable():
    with pytest.raises(UnresolvableHost):
        resolve_and_check("", 80, allow_private=False)


@pytest.mark.parametrize(("host", "reason"), [
    ("169.254.169.254", "cloud metadata"), ("169.254.0.1", "link-local"), ("[fe80::1]", "link-local"),
    ("[fd00:ec2::254]", "cloud metadata"), ("[::ffff:169.254.169.254]", "cloud metadata"),
])
def test_link_local_is_refused_even_when_private_addresses_are_allowed(host, reason):
    # allow_private is what a rule naming the host exactly gives (web_fetch and the egress proxy alike):
    # loopback and private then pass, link-local and the metadata endpoints never do.
    with pytest.raises(AddressRefused) as info:
        resolve_and_check(host, 80, allow_private=True)
    assert reason in info.value.reason
    assert resolve_and_check("10.0.0.1", 80, allow_private=True) == ["10.0.0.1"]
