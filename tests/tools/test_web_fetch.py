"""web_fetch against a real HTTP server on 127.0.0.1.

Fetching it needs `allowPrivateNetworks` or a `network` rule naming it exactly (it is loopback);
without, the same server proves the guard: it must refuse before any request is sent. No test sends
traffic anywhere but loopback: refused addresses are refused before connecting."""

from __future__ import annotations

import json
import re
import shutil
import ssl
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from runner.engine.cancel import RunCancel
from runner.policy.load import check_policy
from runner.policy.model import Target
from runner.tools.base import ToolContext, ToolError
from runner.tools.registry import core_tools
from runner.tools.web_fetch import MAX_REDIRECTS, WebFetch, check_hop, fetch, html_to_text, redirect_url

PAGE = b"""<!doctype html><html><head><title>Guide &amp; Notes</title>
<style>body { color: red }</style><script>var secret = "do not show";</script></head>
<body><h1>Hello</h1><p>Some <b>bold</b> text and <a href="/docs/next.html">a link</a>.</p>
<ul><li>one</li><li>two</li></ul><pre><code>snake_case = 1</code></pre></body></html>"""


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        self.server.paths.append(self.path)
        url = urlsplit(self.path)
        query = parse_qs(url.query)
        route = url.path
        if route == "/page.html":
            self._send(200, "text/html; charset=utf-8", PAGE)
        elif route == "/data.json":
            self._send(200, "application/json", json.dumps({"key": "value", "n": [1, 2]}).encode())
        elif route == "/plain.txt":
            self._send(200, "text/plain; charset=iso-8859-1", "café\n".encode("latin-1"))
        elif route == "/big.txt":
            self._send(200, "text/plain", b"x" * 200_000)
        elif route == "/exact.txt":
            self._send(200, "text/plain", b"y" * 1000)
        elif route == "/missing":
            self._send(404, "text/html", b"<html><body><h1>Not here</h1><p>try elsewhere</p></body></html>")
        elif route == "/image.png":
            self._send(200, "image/png", b"\x89PNG\r\n\x1a\n" + b"\x00" * 64)
        elif route == "/untyped":
            self._send(200, None, b"\x00\x01\x02binary")
        elif route == "/empty":
            self._send(200, "text/plain", b"")
        elif route.startswith("/hops/"):  # /hops/N redirects N more times, relative and absolute in turn
            n = int(route.rsplit("/", 1)[1])
            if n == 0:
                self._send(200, "text/plain", b"arrived")
            elif n % 2:
                self._redirect(f"/hops/{n - 1}")
            else:
                self._redirect(f"http://127.0.0.1:{self.server.server_port}/hops/{n - 1}")
        elif route == "/host":
            self._send(200, "text/plain", self.headers["Host"].encode())
        elif route == "/to":
            self._redirect(query["url"][0])
        elif route == "/slow":  # answers once the tests are over: only a timeout ends a fetch of it
            self.server.closing.wait(600)
            self._send(200, "text/plain", b"late")
        else:
            self._send(500, "text/plain", b"no such route in the test server")

    def _redirect(self, location):
        self.send_response(302)
        self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _send(self, status, content_type, body):
        self.send_response(status)
        if content_type:
            self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass  # the client hanging up early (size cap, timeout) is what those tests do


@pytest.fixture(scope="module")
def server():
    httpd = Server(("127.0.0.1", 0), Handler)
    httpd.paths = []
    httpd.closing = threading.Event()
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.closing.set()
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def base(server):
    server.paths.clear()
    return f"http://127.0.0.1:{server.server_port}"


@pytest.fixture
def open_ctx(ws):
    return ToolContext(workspace=ws, cancel=RunCancel(), web={"allowPrivateNetworks": True})


def run(ctx, **args):
    return WebFetch().run(args, ctx)


def error(ctx, **args) -> ToolError:
    with pytest.raises(ToolError) as info:
        run(ctx, **args)
    return info.value


# --- fetching (allowPrivateNetworks on) -----------------------------------------


def test_html_becomes_markdown_with_header(open_ctx, base):
    out = run(open_ctx, url=f"{base}/page.html")
    header, _, text = out.content.partition("\n\n")
    assert header == f"URL: {base}/page.html | status: 200 | content-type: text/html"
    assert text.startswith("# Guide & Notes\n\n# Hello\n\n")
    assert "Some **bold** text and [a link](" + base + "/docs/next.html)." in text  # link made absolute
    assert "- one\n- two" in text
    assert "snake_case = 1" in text  # not escaped to snake\_case
    assert "do not show" not in text and "color: red" not in text
    assert out.details["hops"] == [{"url": f"{base}/page.html", "status": 200, "address": "127.0.0.1"}]
    assert out.details["body_cut"] is False


def test_json_passes_through(open_ctx, base):
    out = run(open_ctx, url=f"{base}/data.json")
    header, _, text = out.content.partition("\n\n")
    assert header.endswith("content-type: application/json")
    assert json.loads(text) == {"key": "value", "n": [1, 2]}


def test_text_is_decoded_with_its_charset(open_ctx, base):
    out = run(open_ctx, url=f"{base}/plain.txt")
    assert out.content.endswith("\n\ncafé\n")


def test_empty_body_says_so(open_ctx, base):
    assert run(open_ctx, url=f"{base}/empty").content.endswith("\n\n[empty body]")


def test_404_is_io_error_with_status_and_excerpt(open_ctx, base):
    err = error(open_ctx, url=f"{base}/missing")
    assert err.type == "IOError"
    assert err.message == f"HTTP 404 Not Found from {base}/missing"
    assert err.extra["status"] == 404
    assert err.extra["body"] == "# Not here try elsewhere"


def test_size_cap_stops_reading_and_says_so(open_ctx, base):
    out = run(open_ctx, url=f"{base}/big.txt", max_bytes=1000)
    text = out.content.split("\n\n", 1)[1]
    assert text.startswith("x" * 1000 + "\n\n[body cut at 1000 bytes; max_bytes up to")
    assert "x" * 1001 not in out.content
    assert out.details["body_bytes"] == 1000 and out.details["body_cut"] is True


def test_body_exactly_at_the_cap_is_not_truncated(open_ctx, base):
    out = run(open_ctx, url=f"{base}/exact.txt", max_bytes=1000)
    assert out.details["body_cut"] is False
    assert "[body cut" not in out.content


def test_policy_max_bytes_is_the_ceiling(ws, base):
    ctx = ToolContext(workspace=ws, cancel=RunCancel(), web={"allowPrivateNetworks": True, "maxBytes": 500})
    out = run(ctx, url=f"{base}/big.txt", max_bytes=10_000)
    assert out.details["body_bytes"] == 500
    assert out.content.endswith("[body cut at 500 bytes (the limit is 500)]")


def test_redirect_chain_is_followed_and_each_hop_recorded(open_ctx, base):
    out = run(open_ctx, url=f"{base}/hops/{MAX_REDIRECTS}")
    assert out.content == f"URL: {base}/hops/0 | status: 200 | content-type: text/plain | redirects: 5\n\narrived"
    hops = out.details["hops"]
    assert [h["url"] for h in hops] == [f"{base}/hops/{n}" for n in range(MAX_REDIRECTS, -1, -1)]
    assert [h["status"] for h in hops] == [302] * MAX_REDIRECTS + [200]


def test_more_than_five_redirects_are_refused(open_ctx, base, server):
    err = error(open_ctx, url=f"{base}/hops/{MAX_REDIRECTS + 1}")
    assert err.type == "IOError"
    assert err.message == f"more than {MAX_REDIRECTS} redirects from {base}/hops/6"
    assert len(err.extra["redirects"]) == MAX_REDIRECTS + 1
    assert "/hops/0" not in server.paths  # the 7th request was never sent


def test_redirect_to_another_scheme_is_refused_at_that_hop(open_ctx, base):
    err = error(open_ctx, url=f"{base}/to?url=file:///etc/passwd")
    assert err.type == "ToolNotAllowed"
    assert err.message.startswith(f"redirect from {base}/to?url=file:///etc/passwd refused: "
                                  "only http and https URLs are fetched, not file: file:")
    assert err.extra["redirects"] == [f"{base}/to?url=file:///etc/passwd"]


def test_binary_content_type_is_refused(open_ctx, base):
    err = error(open_ctx, url=f"{base}/image.png")
    assert err.type == "IOError"
    assert err.message == f"{base}/image.png is image/png, not text or HTML; not fetched"


def test_untyped_binary_is_refused(open_ctx, base):
    err = error(open_ctx, url=f"{base}/untyped")
    assert err.type == "IOError"
    assert "looks binary" in err.message


def _bounded_by(err: ToolError, seconds: float) -> bool:
    """The timeout the fetch ran under, as its message says, was at most `seconds` (or no time was left)."""
    within = re.search(r"within (\d+\.\d)s", err.message)
    return float(within[1]) <= seconds if within else "time" in err.message


def test_policy_timeout_applies(ws, base):
    ctx = ToolContext(workspace=ws, cancel=RunCancel(), web={"allowPrivateNetworks": True, "timeoutSeconds": 0.2})
    err = error(ctx, url=f"{base}/slow")
    assert err.type == "Timeout" and _bounded_by(err, 0.2), err.message  # not the default timeout (30 s)


def test_run_deadline_bounds_the_timeout(ws, base):
    ctx = ToolContext(workspace=ws, cancel=RunCancel(deadline=time.monotonic() + 0.2),
                      web={"allowPrivateNetworks": True})
    err = error(ctx, url=f"{base}/slow")
    assert err.type == "Timeout" and _bounded_by(err, 0.2), err.message  # not the default timeout (30 s)
    spent = ToolContext(workspace=ws, cancel=RunCancel(deadline=time.monotonic() - 1),
                        web={"allowPrivateNetworks": True})
    assert error(spent, url=f"{base}/plain.txt").message == "no time left in the run to fetch"


# --- the guard (allowPrivateNetworks off) ---------------------------------------


def test_loopback_server_is_refused_before_any_request(ctx, base, server):
    err = error(ctx, url=f"{base}/page.html")
    assert err.type == "ToolNotAllowed"
    assert "127.0.0.1 is refused: loopback address" in err.message
    assert "web.allowPrivateNetworks" in err.message
    assert server.paths == []


def test_explicit_false_is_the_same_as_unset(ws, base, server):
    ctx = ToolContext(workspace=ws, cancel=RunCancel(), web={"allowPrivateNetworks": False})
    assert error(ctx, url=f"{base}/page.html").type == "ToolNotAllowed"
    assert server.paths == []


def test_localhost_name_is_resolved_and_refused(ctx, server):
    err = error(ctx, url=f"http://localhost:{server.server_port}/page.html")
    assert err.type == "ToolNotAllowed"
    assert "localhost (" in err.message and "loopback address" in err.message
    assert server.paths == []


@pytest.mark.parametrize(("url", "reason"), [
    ("http://[::1]/", "loopback address"),
    ("http://[::ffff:127.0.0.1]/", "IPv4-mapped form of 127.0.0.1, a loopback address"),
    ("http://10.0.0.1/", "private address"),
    ("http://169.254.169.254/latest/meta-data", "link-local address (cloud metadata endpoint)"),
    ("http://0.0.0.0/", "unspecified address"),
    ("http://127.1/", "loopback address"),
    ("https://[fd00:ec2::254]/", "cloud metadata endpoint"),
])
def test_non_public_addresses_are_refused(ctx, url, reason):
    err = error(ctx, url=url)
    assert err.type == "ToolNotAllowed"
    assert reason in err.message
    assert reason in err.extra["reason"]


@pytest.mark.parametrize(("url", "scheme"), [("ftp://x/", "ftp"), ("file:///etc/passwd", "file"),
                                             ("gopher://x/", "gopher")])
def test_other_schemes_are_refused_even_with_private_networks_allowed(open_ctx, url, scheme):
    err = error(open_ctx, url=url)
    assert err.type == "ToolNotAllowed"
    assert err.message == f"only http and https URLs are fetched, not {scheme}: {url}"


@pytest.mark.parametrize("url", ["example.com/x", "http:///nohost", "http://example.com:70000/"])
def test_malformed_urls_are_invalid_arguments(ctx, url):
    assert error(ctx, url=url).type == "InvalidArguments"


def test_redirect_to_metadata_is_refused_at_the_next_hop(base):
    # Every address here is loopback, so a whole fetch cannot pass hop 1 with the guard on.
    # Take a real redirect from the server with the first hop allowed, then check the next hop as
    # fetch() does, with the guard on: the per-hop check refuses it before anything is sent.
    first = check_hop(f"{base}/to?url=http://169.254.169.254/latest/meta-data", allow_private=True)
    response = httpx.get(str(first.url), follow_redirects=False, trust_env=False)
    assert response.status_code == 302
    target = redirect_url(first.url, response.headers["location"])
    assert str(target) == "http://169.254.169.254/latest/meta-data"
    with pytest.raises(ToolError) as info:
        check_hop(target, allow_private=False)
    assert info.value.type == "ToolNotAllowed"
    assert "cloud metadata endpoint" in info.value.message
    # Link-local is refused even with private addresses allowed (issue 25: whatever the policy names).
    with pytest.raises(ToolError) as info:
        check_hop(target, allow_private=True)
    assert "cloud metadata endpoint" in info.value.message


def test_relative_redirect_resolves_against_the_current_hop():
    here = httpx.URL("http://127.0.0.1:8000/a/b?q=1")
    assert str(redirect_url(here, "../c")) == "http://127.0.0.1:8000/c"
    assert str(redirect_url(here, "//10.0.0.1/x")) == "http://10.0.0.1/x"
    with pytest.raises(ToolError) as info:
        check_hop(redirect_url(here, "//10.0.0.1/x"), allow_private=False)
    assert info.value.type == "ToolNotAllowed"


# --- contract --------------------------------------------------------------------


def test_targets_are_the_normalized_url_and_the_host_it_connects_to(ctx):
    assert WebFetch().targets({"url": "HTTPS://Example.COM:443"}, ctx) == [
        Target("web_fetch", "url:https://example.com/"), Target("network", "net:example.com:443")]
    assert WebFetch().targets({"url": "http://[0:0::1]:8080/x"}, ctx) == [
        Target("web_fetch", "url:http://[::1]:8080/x"), Target("network", "net:[::1]:8080")]


def test_registered_after_the_earlier_tools():
    # Appended: the tools list is part of the byte-stable prompt prefix.
    names = core_tools().names
    assert isinstance(core_tools().get("web_fetch"), WebFetch)
    assert names.index("web_fetch") > names.index("bash")
    assert names[:6] == ["read", "list", "glob", "grep", "write", "edit"]


def test_title_is_not_repeated_when_it_is_the_first_heading():
    text = html_to_text(b"<title>Same</title><h1>Same</h1><p>body</p>", None, "https://example.com/")
    assert text == "# Same\n\nbody"


def test_a_host_name_is_fetched_from_its_checked_address_with_its_own_host_header(open_ctx, server):
    out = run(open_ctx, url=f"http://localhost:{server.server_port}/host")
    assert out.content.endswith(f"\n\nlocalhost:{server.server_port}")
    assert out.details["hops"][0]["address"] == "127.0.0.1"


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory):
    """HTTPS on 127.0.0.1 with a certificate for the name `localhost` only (no IP address in it)."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl not installed")
    d = tmp_path_factory.mktemp("tls")
    cert, key = d / "cert.pem", d / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost"], check=True, capture_output=True)
    httpd = Server(("127.0.0.1", 0), Handler)
    httpd.paths = []
    server_side = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_side.load_cert_chain(cert, key)
    httpd.socket = server_side.wrap_socket(httpd.socket, server_side=True)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield httpd, ssl.create_default_context(cafile=str(cert))
    httpd.shutdown()
    httpd.server_close()


def test_https_to_a_checked_address_verifies_the_host_name(tls_server):
    # The request goes to 127.0.0.1, but SNI and certificate verification use `localhost`:
    # without that the certificate (for localhost only) would not verify.
    httpd, trust = tls_server
    got = fetch(f"https://localhost:{httpd.server_port}/host", allow_private=True, max_bytes=1000,
                end=time.monotonic() + 60, verify=trust)
    assert (got.status, got.body) == (200, f"localhost:{httpd.server_port}".encode())


def test_https_certificate_is_verified(tls_server):
    httpd, trust = tls_server
    with pytest.raises(ToolError) as info:  # the certificate does not name 127.0.0.1
        fetch(f"https://127.0.0.1:{httpd.server_port}/host", allow_private=True, max_bytes=1000,
              end=time.monotonic() + 60, verify=trust)
    assert info.value.type == "IOError"
    assert "CERTIFICATE_VERIFY_FAILED" in info.value.message
    with pytest.raises(ToolError) as info:  # nor is it trusted by the default CA bundle
        fetch(f"https://localhost:{httpd.server_port}/host", allow_private=True, max_bytes=1000,
              end=time.monotonic() + 60)
    assert "CERTIFICATE_VERIFY_FAILED" in info.value.message


def test_html_to_text_drops_inline_images_and_keeps_alt_text():
    html = b'<p>Logo: <img alt="logo" src="data:image/png;base64,AAAA"> <img alt="x" src="x.png"></p>'
    text = html_to_text(html, None, "https://example.com/dir/")
    assert "base64" not in text
    assert "![x](https://example.com/dir/x.png)" in text


@pytest.mark.parametrize(("web", "ok"), [
    ({"allowPrivateNetworks": True, "maxBytes": 1024, "timeoutSeconds": 2.5}, True),
    ({"allowPrivateNetworks": "yes"}, False),
    ({"maxBytes": 0}, False),
    ({"timeoutSeconds": 0}, False),
    ({"allowPrivateNetwork": True}, False),  # a typo must not silently leave the guard on
])
def test_policy_schema_for_web_section(tmp_path, web, ok):
    path = tmp_path / "p.jsonc"
    path.write_text(json.dumps({"extends": "default", "web": web}), encoding="utf-8")
    errors = check_policy(str(path))
    assert (errors == []) is ok, errors


def test_each_redirect_hop_is_decided_and_recorded(ws, base):
    # An open redirect on an allowed URL must not lead to a URL the policy does not allow, and the
    # denial is an audit event like any other (so it reaches summary.json and the exit code).
    from runner.core.events import PermissionDecision
    from runner.engine.call import CallEnv, bind_hooks
    from runner.policy.load import load_policy
    from runner.tools.registry import core_tools

    rules = [{"domain": "web_fetch", "pattern": "url:http://127.0.0.1:*/hops/2", "decision": "allow"},
             {"domain": "web_fetch", "pattern": "url:http://127.0.0.1:*/hops/1", "decision": "deny"}]
    (ws / "p.jsonc").write_text(json.dumps({"extends": "default", "permission": {"rules": rules}}))
    events = []
    ctx = ToolContext(workspace=ws, cancel=RunCancel(), web={"allowPrivateNetworks": True}, call_id="call_7",
                      call_tool="web_fetch")
    env = CallEnv(core_tools(), load_policy(str(ws / "p.jsonc")), ctx, "run")
    bind_hooks(env, events.append)
    err = error(ctx, url=f"{base}/hops/2")
    assert err.type == "ToolNotAllowed"
    assert "redirect from" in err.message and "/hops/1" in err.message
    recorded = [e for e in events if isinstance(e, PermissionDecision)]
    assert [(e.call_id, e.tool, e.decision) for e in recorded] == [("call_7", "web_fetch", "deny")]
    assert recorded[0].targets[0]["target"].endswith("/hops/1")


@pytest.mark.parametrize(("pattern", "reached"), [("net:127.0.0.1:{port}", True), ("net:127.0.0.1:*", False),
                                                  ("regex:net:127\\.0\\.0\\.1:{port}", False)])
def test_loopback_is_reached_only_when_a_network_rule_names_it_exactly(ws, base, server, pattern, reached):
    # As the egress proxy decides (runner/policy/egress.py net_verdict): the web section says nothing here.
    from runner.policy.load import load_policy
    from runner.tools.readable import policy_decider

    rule = {"domain": "network", "pattern": pattern.format(port=server.server_port), "decision": "allow"}
    (ws / "p.jsonc").write_text(json.dumps({"extends": "default", "permission": {"rules": [rule]}}))
    ctx = ToolContext(workspace=ws, cancel=RunCancel(), decide=policy_decider(load_policy(str(ws / "p.jsonc"))))
    if reached:
        assert run(ctx, url=f"{base}/plain.txt").content.endswith("café\n")
        assert server.paths == ["/plain.txt"]
    else:
        err = error(ctx, url=f"{base}/plain.txt")
        assert err.type == "ToolNotAllowed" and "loopback address" in err.message
        assert f"net:127.0.0.1:{server.server_port} exactly" in err.message
        assert server.paths == []


# --- one canonical URL for the decision, the address check and the request ----------------------


@pytest.mark.parametrize("spelling", ["127。0。0。1", "127．0．0．1", "2130706433", "0x7f.1", "0177.0.0.1",
                                      "127.0.0.1."])
def test_every_spelling_of_an_address_is_fetched_as_the_canonical_url(open_ctx, server, spelling):
    port = server.server_port
    server.paths.clear()
    out = run(open_ctx, url=f"http://{spelling}:{port}/host")
    assert out.content.startswith(f"URL: http://127.0.0.1:{port}/host | status: 200")
    assert out.content.endswith(f"\n\n127.0.0.1:{port}")  # the Host header is the canonical host too
    assert out.details["hops"] == [{"url": f"http://127.0.0.1:{port}/host", "status": 200, "address": "127.0.0.1"}]
    assert WebFetch().targets({"url": f"http://{spelling}:{port}/host"}, open_ctx) == [
        Target("web_fetch", f"url:http://127.0.0.1:{port}/host"), Target("network", f"net:127.0.0.1:{port}")]


@pytest.mark.parametrize("spelling", ["127。0。0。1", "2130706433", "0177.0.0.1", "0x7f.0.0.1", "[::ffff:7f00:1]"])
def test_the_guard_refuses_every_spelling_of_loopback(ctx, server, spelling):
    server.paths.clear()
    err = error(ctx, url=f"http://{spelling}:{server.server_port}/x")
    assert err.type == "ToolNotAllowed" and "loopback address" in err.message
    assert server.paths == []


@pytest.mark.parametrize("host", ["127。0。0。1", "0177.0.0.1", "0x7f.1", "LOCALHOST.", "ＬＯＣＡＬＨＯＳＴ"])
def test_ssrf_check_resolves_the_canonical_host(host):
    from runner.tools.ssrf import AddressRefused, resolve_and_check

    with pytest.raises(AddressRefused) as info:
        resolve_and_check(host, 80, allow_private=False)
    assert info.value.reason == "loopback address"
    assert info.value.host in ("127.0.0.1", "localhost")


@pytest.mark.parametrize("url", ["http://user@127.0.0.1/", "http://user:s3cr3t@127。0。0。1:8080/x",
                                 "https://:@example.com/"])
def test_credentials_are_invalid_arguments_before_any_decision(open_ctx, url):
    with pytest.raises(ToolError) as info:
        WebFetch().targets({"url": url}, open_ctx)
    assert info.value.type == "InvalidArguments"
    assert "credentials" in info.value.message and "s3cr3t" not in info.value.message
    assert error(open_ctx, url=url).type == "InvalidArguments"


@pytest.mark.parametrize("url", ["example.com/x", "http:///nohost", "http://1.2.3.4.5/", "http://a..b/"])
def test_a_url_without_a_usable_host_is_refused_before_any_decision(ctx, url):
    with pytest.raises(ToolError) as info:
        WebFetch().targets({"url": url}, ctx)
    assert info.value.type == "InvalidArguments"


def test_a_redirect_location_is_made_canonical():
    here = httpx.URL("http://example.com/a/b")
    assert str(redirect_url(here, "//2130706433:8080/./x/../y")) == "http://127.0.0.1:8080/y"
    assert str(redirect_url(here, "http://Bücher.de./%7e")) == "http://xn--bcher-kva.de/~"
    with pytest.raises(ToolError) as info:
        redirect_url(here, "http://user:s3cr3t@example.com/")
    assert info.value.type == "IOError" and "credentials" in info.value.message
    assert "s3cr3t" not in info.value.message
