"""URLs are decided in the form the HTTP client connects to: normalize_url, canonical_host,
ipv4_literal, and the `web_fetch` target `policy explain` shows for a URL the tool refuses."""

from __future__ import annotations

import httpx
import pytest

from runner.policy.targets import (
    CredentialsInURL,
    InvalidURL,
    canonical_host,
    ipv4_literal,
    normalize_url,
    targets_for,
    url_target,
)


@pytest.mark.parametrize(("url", "canonical"), [
    # Scheme and host lower-cased, default port dropped, empty path `/`, fragment dropped (as before).
    ("HTTPS://Example.COM:443", "https://example.com/"),
    ("http://Example.com:8080#top", "http://example.com:8080/"),
    ("http://example.com:0080/", "http://example.com/"),
    ("ftp://Example.com/f", "ftp://example.com/f"),
    ("file:///etc/passwd", "file:///etc/passwd"),
    # Dots of other scripts (UTS #46 maps them, as browsers and httpx do).
    ("http://127。0。0。1/", "http://127.0.0.1/"),
    ("http://127．0．0．1/", "http://127.0.0.1/"),
    ("http://127｡0｡0｡1/", "http://127.0.0.1/"),
    ("http://pastebin。com/raw", "http://pastebin.com/raw"),
    # IPv4 in every form inet_aton reads.
    ("http://2130706433/", "http://127.0.0.1/"),
    ("http://0x7f.1/", "http://127.0.0.1/"),
    ("http://0x7F000001/", "http://127.0.0.1/"),
    ("http://0177.0.0.1/", "http://127.0.0.1/"),
    ("http://127.1/", "http://127.0.0.1/"),
    ("http://10.1.257/", "http://10.1.1.1/"),
    ("http://0/", "http://0.0.0.0/"),
    # IPv6 compressed, lower-case, in brackets.
    ("http://[0:0:0:0:0:0:0:1]:8080/", "http://[::1]:8080/"),
    ("http://[::FFFF:127.0.0.1]/", "http://[::ffff:7f00:1]/"),
    # A trailing dot is the same name to the resolver.
    ("http://pastebin.com./", "http://pastebin.com/"),
    ("http://127.0.0.1./", "http://127.0.0.1/"),
    # Fullwidth letters, percent-encoded hosts and IDNA.
    ("http://ＥＸＡＭＰＬＥ.com/", "http://example.com/"),
    ("http://%31%32%37.0.0.1/", "http://127.0.0.1/"),
    ("http://ex%61mple.com/", "http://example.com/"),
    ("http://Bücher.de/", "http://xn--bcher-kva.de/"),
    ("http://faß.de/", "http://xn--fa-hia.de/"),
    ("http://x\u00ad.com/", "http://x.com/"),  # a soft hyphen maps to nothing
    # The path as httpx requests it: dot segments removed, unreserved escapes decoded, the rest encoded.
    ("http://h/a/../secret", "http://h/secret"),
    ("http://h/./x/.%2e/y", "http://h/y"),
    ("http://h/%73ecret", "http://h/secret"),
    ("http://h/a%2fb", "http://h/a%2Fb"),
    ("http://h/a b?q=ü c", "http://h/a%20b?q=%C3%BC%20c"),
    ("http://h?x", "http://h/?x"),
])
def test_canonical_form(url, canonical):
    assert normalize_url(url) == canonical
    assert normalize_url(canonical) == canonical  # idempotent


@pytest.mark.parametrize("url", [
    "http://127。0。0。1:8080/a/../b?x=ü#f", "http://2130706433/", "http://Bücher.de/ä", "http://[::1]/",
    "https://example.com/%7euser/a%2fb?q=a b", "http://h/{x}`y`",
])
def test_httpx_sends_the_canonical_url_as_it_is(url):
    canonical = normalize_url(url)
    assert str(httpx.URL(canonical)) == canonical


@pytest.mark.parametrize("url", ["http://s3cr3t@example.com/", "http://user:s3cr3t@example.com/",
                                 "https://:@example.com/", "http://s3cr3t@b@example.com/",
                                 "http://example.com\\@127.0.0.1/"])
def test_credentials_are_refused(url):
    with pytest.raises(CredentialsInURL) as info:
        normalize_url(url)
    assert "s3cr3t" not in str(info.value)  # the message never repeats them


def test_credentials_can_be_dropped_for_the_target_explain_shows():
    assert normalize_url("http://user:pw@127。0。0。1/x", drop_credentials=True) == "http://127.0.0.1/x"
    target = url_target("http://user:pw@127.0.0.1/x")
    assert (target.target, target.floor) == ("url:http://127.0.0.1/x", "deny")
    assert "credentials" in (target.note or "")
    assert "pw" not in url_target("http://user:pw@a..b/x").target


@pytest.mark.parametrize("url", [
    "example.com/x", "http:///nohost", "http://example.com:70000/", "http://example.com:0/", "http://h:8o/",
    "http://1.2.3.4.5/", "http://256.1.1.1/", "http://1.2.3.0x100/", "http://08.1.1.1/", "http://foo.1/",
    "http://a..b/", "http://a b/", "http://a%00b/", "http://a%2fb/", "http://%ff/", "http://[::1/", "http://[::1]x/",
    "http://[fe80::1%25eth0]/", "http://[1.2.3.4]/",
])
def test_urls_that_name_no_usable_host_are_invalid(url):
    with pytest.raises(InvalidURL):
        normalize_url(url)


def test_an_invalid_url_is_denied_with_a_note_in_explain(tmp_path):
    [target] = targets_for("web_fetch", "http://example.com:99999/", tmp_path)
    assert target.floor == "deny" and (target.note or "").startswith("invalid URL:")


@pytest.mark.parametrize(("host", "address"), [
    ("2130706433", "127.0.0.1"), ("0x7f.1", "127.0.0.1"), ("0177.0.0.1", "127.0.0.1"), ("127.1", "127.0.0.1"),
    ("0xa9.0xfe.0xa9.0xfe", "169.254.169.254"), ("1.2.3.4", "1.2.3.4"), ("0x", "0.0.0.0"),
    ("4294967295", "255.255.255.255"),
])
def test_ipv4_literal_reads_every_inet_aton_form(host, address):
    assert str(ipv4_literal(host)) == address


@pytest.mark.parametrize("host", ["example.com", "1.example", "x0", "0x7g"])
def test_names_are_not_ipv4_literals(host):
    assert ipv4_literal(host) is None


def test_canonical_host_brackets_ipv6_and_maps_names():
    assert canonical_host("[::FFFF:7F00:1]") == "[::ffff:7f00:1]"
    assert canonical_host("LOCALHOST.") == "localhost"
    assert canonical_host("ＬＯＣＡＬＨＯＳＴ") == "localhost"
    assert canonical_host("my_host.internal") == "my_host.internal"  # underscores: as httpx and resolvers allow
