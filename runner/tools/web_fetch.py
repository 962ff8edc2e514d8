"""web_fetch: one http(s) URL, as text the model can read.

Every hop (the URL, then each redirect) is taken in its canonical form (normalize_url,
the form the policy decides) and checked before anything is sent: no credentials, http or
https only, and every address the host resolves to must be public unless the `network` rule
that allows `net:HOST:PORT` names it exactly (or the policy's `web.allowPrivateNetworks` says
so); link-local never. The decision, the address check and the request all see that one
canonical URL. The request goes to a checked address (the Host header and TLS name stay the
URL's), so a second DNS answer cannot redirect it. Redirects are followed here, not by httpx,
so each one goes through the same check.

This runs in the runner's process, outside the sandbox, so it goes out the way a command's
connection goes through the egress proxy: each hop is decided on its `url:` target and on its
network target `net:HOST:PORT` under the run's `network` rules (the policy's own and its
`sandbox.network.allow` list), and resolved and pinned by the same code (runner/tools/ssrf.py,
runner/policy/egress.py), whatever `--sandbox` is.
"""

from __future__ import annotations

import contextlib
import re
import ssl
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urljoin

import httpx
from bs4 import BeautifulSoup
from markdownify import MarkdownConverter

from runner.policy.egress import net_verdict
from runner.policy.model import Target
from runner.policy.sandbox_config import net_target
from runner.policy.targets import CredentialsInURL, InvalidURL, normalize_url, targets_for
from runner.tools.base import STOPPING, Cancel, Cancelled, Tool, ToolContext, ToolError, ToolOutput
from runner.tools.bounded_http import Bounded, BoundedTransport
from runner.tools.ssrf import AddressRefused, UnresolvableHost, resolve_and_check

DEFAULT_MAX_BYTES = 5 * 1024 * 1024
DEFAULT_TIMEOUT_S = 30.0
MAX_REDIRECTS = 5
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
ERROR_EXCERPT_BYTES = 2048  # read from an error response; enough for a message, not a page
ERROR_EXCERPT_CHARS = 300
USER_AGENT = "agent-run-web-fetch/1"

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
# Non-text/* types that are text all the same; anything else (images, archives, PDFs,
# octet-stream) is refused rather than shown to the model as mojibake.
TEXT_TYPES = frozenset({
    "application/json", "application/xml", "application/javascript", "application/x-javascript",
    "application/ecmascript", "application/yaml", "application/x-yaml", "application/toml",
    "application/x-ndjson", "application/sql", "application/x-sh",
})
# Elements whose text is not page content.
DROPPED_TAGS = ["script", "style", "noscript", "template", "svg", "canvas", "iframe", "object", "embed"]


@dataclass(frozen=True)
class Hop:
    """A URL that passed the check, and the addresses it may be fetched from."""

    url: httpx.URL
    host: str  # IDNA-encoded, no brackets
    port: int
    addresses: list[str]
    literal: bool  # the URL names an IP address


@dataclass
class Fetched:
    url: httpx.URL
    status: int
    media_type: str
    charset: str | None
    body: bytes
    truncated: bool
    hops: list[dict[str, Any]] = field(default_factory=list)


class WebFetch(Tool):
    name = "web_fetch"
    domain = "web_fetch"
    risk = "high"
    aliases = ("WebFetch",)
    concurrent = "read"  # changes neither the workspace nor the world: may run beside others
    description = (
        "GET an http(s) URL as text (HTML as Markdown), cut at max_bytes (default 5 MB)."
    )
    schema = {
        "type": "object",
        "properties": {
            "url": {"type": "string", "minLength": 1},
            "max_bytes": {"type": "integer", "minimum": 1},
        },
        "required": ["url"],
        "additionalProperties": False,
    }

    def targets(self, args: dict[str, Any], ctx: ToolContext) -> list[Target]:
        canonical(args["url"])  # a URL that cannot be fetched is refused before any decision
        # Its `url:` target and its network target `net:HOST:PORT` (runner/policy/targets.py web_targets).
        return targets_for("web_fetch", args["url"], ctx.workspace)

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        web = ctx.web or {}
        # The policy's maxBytes is both the default and the ceiling: the model may ask for less, not more.
        limit = int(web.get("maxBytes", DEFAULT_MAX_BYTES))
        max_bytes = min(int(args.get("max_bytes", limit)), limit)
        timeout = float(web.get("timeoutSeconds", DEFAULT_TIMEOUT_S))
        left = ctx.cancel.remaining()
        if left is not None:
            timeout = min(timeout, left)
        if timeout <= 0:
            raise ToolError("Timeout", "no time left in the run to fetch")
        authorize = ctx.authorize
        got = fetch(args["url"], allow_private=bool(web.get("allowPrivateNetworks", False)),
                    max_bytes=max_bytes, end=time.monotonic() + timeout, cancel=ctx.cancel,
                    authorize=(lambda u: authorize(targets_for("web_fetch", u, ctx.workspace), ctx.call_id,
                                                    ctx.call_tool)) if authorize else None,
                    named_exactly=exact_in(ctx))
        try:  # a page of pathological HTML converts slowly: the Cancel is asked at every element
            text = to_text(got.media_type, got.charset, got.body, str(got.url), ctx.cancel)
        except Cancelled as stopped:
            if stopped.why == STOPPING:
                raise ToolError("Timeout", f"converting {got.url} to text stopped: the run is stopping") from None
            raise ToolError("Timeout", f"the run's time ran out while {got.url} was converted to text") from None
        header = f"URL: {got.url} | status: {got.status} | content-type: {got.media_type}"
        if len(got.hops) > 1:
            header += f" | redirects: {len(got.hops) - 1}"
        content = f"{header}\n\n{text}" if text else f"{header}\n\n[empty body]"
        if got.truncated:
            more = f"; max_bytes up to {limit} reads more" if max_bytes < limit else f" (the limit is {limit})"
            content += f"\n\n[body cut at {max_bytes} bytes{more}]"
        # `body_*`: the fetch's own figures. `truncated` and `bytes` are the truncation's, which every result
        # passes through (runner.engine.call.truncated): a page within max_bytes may still be far past the limits.
        details = {"hops": got.hops, "body_bytes": len(got.body), "body_cut": got.truncated,
                   "content_type": got.media_type}
        return ToolOutput(content, details)


def canonical(url: str) -> str:
    """normalize_url, as a tool error: InvalidArguments for credentials or a URL without a usable host."""
    try:
        return normalize_url(url)
    except CredentialsInURL as exc:  # the message does not repeat the URL: it holds a password
        raise ToolError("InvalidArguments", str(exc)) from None
    except InvalidURL as exc:
        raise ToolError("InvalidArguments", f"invalid URL {url!r}: {exc}") from None


def exact_in(ctx: ToolContext) -> Callable[[str, int], bool] | None:
    """Whether the run's policy allows `net:HOST:PORT` by a rule naming it exactly, as the egress proxy
    asks it (runner/policy/egress.py net_verdict): only then may a private or loopback address be reached.
    Decided again without recording: the call's decision (or the redirect's) already recorded it."""
    decide = ctx.decide
    if decide is None:
        return None
    return lambda host, port: net_verdict(decide([Target("network", net_target(host, port))])).exact


def check_hop(url: str | httpx.URL, allow_private: bool,
              named_exactly: Callable[[str, int], bool] | None = None) -> Hop:
    """Scheme and address check for one URL of the chain, in its canonical form; raises ToolError
    when refused.

    Resolves the host (an IP literal is checked without a lookup). A private or loopback address
    passes when `allow_private` or `named_exactly(host, port)`; a link-local one never."""
    text = canonical(str(url))
    try:
        u = httpx.URL(text)
    except (httpx.InvalidURL, TypeError, ValueError) as exc:
        raise ToolError("InvalidArguments", f"invalid URL {text!r}: {exc}") from None
    if u.scheme not in ("http", "https"):
        raise ToolError("ToolNotAllowed", f"only http and https URLs are fetched, not {u.scheme}: {url}")
    host = u.raw_host.decode("ascii")
    port = u.port or (443 if u.scheme == "https" else 80)
    if not host:
        raise ToolError("InvalidArguments", f"no host in URL: {url}")
    if not 0 < port < 65536:
        raise ToolError("InvalidArguments", f"port out of range in URL: {url}")
    private_ok = allow_private or (named_exactly is not None and named_exactly(host, port))
    try:
        addresses = resolve_and_check(host, port, private_ok)
    except AddressRefused as exc:
        raise ToolError("ToolNotAllowed", f"{url}: {exc}; only public addresses are fetched, unless a `network` "
                        f"rule names {net_target(host, port)} exactly (or the policy's web.allowPrivateNetworks "
                        "is true); link-local addresses never", reason=exc.reason) from None
    except UnresolvableHost as exc:
        raise ToolError("IOError", str(exc)) from None
    return Hop(u, host, port, addresses, literal=host in addresses)


def redirect_url(current: httpx.URL, location: str) -> httpx.URL:
    """Where a redirect's Location (possibly relative) points, from `current`, in canonical form:
    the policy decides it, the address check resolves it and the next request goes to it."""
    try:
        return httpx.URL(normalize_url(urljoin(str(current), location.strip())))
    except CredentialsInURL:
        raise ToolError("IOError", f"redirect from {current} to a URL with credentials (user@) refused") from None
    except (InvalidURL, httpx.InvalidURL, ValueError) as exc:
        raise ToolError("IOError", f"redirect from {current} to an invalid URL {location!r}: {exc}") from None


def fetch(url: str, *, allow_private: bool, max_bytes: int, end: float,
          cancel: Cancel | None = None, verify: ssl.SSLContext | bool = True,
          authorize: Callable[[str], None] | None = None,
          named_exactly: Callable[[str, int], bool] | None = None) -> Fetched:
    """GET `url`, following redirects by hand; every hop is checked with check_hop.

    `authorize`: decides (and records) a redirect's URL and network target; `named_exactly`: see check_hop.
    `verify`: how TLS certificates are verified (httpx's default CA bundle unless given)."""
    hops: list[dict[str, Any]] = []
    target: str | httpx.URL = url
    for _ in range(MAX_REDIRECTS + 1):
        try:
            if hops and authorize is not None:
                # The policy decided the first URL; a redirect elsewhere is decided again (its URL and
                # the host it connects to), so an open redirect on an allowed site cannot lead to a URL
                # or a host the policy does not allow.
                authorize(str(target))
            hop = check_hop(target, allow_private, named_exactly)
        except ToolError as exc:
            if not hops:
                raise
            # Say which redirect led there, and keep the chain.
            raise ToolError(exc.type, f"redirect from {hops[-1]['url']} refused: {exc.message}",
                            **exc.extra, redirects=[h["url"] for h in hops]) from None
        # Bounded at every connect, read and write (_Bounded), not only between reads of the body: a server that
        # sends its headers a byte at a time never lets a read time out. No decision is recorded in here: that
        # happens above.
        try:
            with _open(hop, Bounded(end, cancel), verify) as (response, address):
                hops.append({"url": str(hop.url), "status": response.status_code, "address": address})
                location = response.headers.get("location")
                if response.status_code in REDIRECT_STATUSES:
                    if not location:
                        raise ToolError("IOError",
                                        f"HTTP {response.status_code} without a Location header from {hop.url}")
                    target = redirect_url(hop.url, location)
                    continue
                media, charset = parse_content_type(response.headers.get("content-type", ""))
                if response.status_code >= 400:
                    body, _ = _read(response, hop.url, ERROR_EXCERPT_BYTES, end, cancel)
                    raise ToolError("IOError", f"HTTP {response.status_code} {response.reason_phrase} from {hop.url}",
                                    status=response.status_code, body=_excerpt(media, charset, body, str(hop.url)))
                if media and not is_text_type(media):
                    raise ToolError("IOError", f"{hop.url} is {media}, not text or HTML; not fetched")
                body, truncated = _read(response, hop.url, max_bytes, end, cancel)
                if not media:
                    media = sniff(body)
                return Fetched(hop.url, response.status_code, media, charset, body, truncated, hops)
        except Cancelled as stopped:
            extra = {"redirects": [h["url"] for h in hops]} if hops else {}
            if stopped.why == STOPPING:
                raise ToolError("Timeout", f"fetching {hop.url} stopped: the run is stopping", **extra) from None
            raise ToolError("Timeout", f"fetching {hop.url} ran out of time", **extra) from None
    raise ToolError("IOError", f"more than {MAX_REDIRECTS} redirects from {url}",
                    redirects=[h["url"] for h in hops])


@contextlib.contextmanager
def _open(hop: Hop, bound: Bounded, verify: ssl.SSLContext | bool) -> Iterator[tuple[httpx.Response, str]]:
    """Sends the GET to the hop's checked addresses in turn; yields the streamed response and the address."""
    remaining = bound.end - time.monotonic()
    if remaining <= 0:
        raise ToolError("Timeout", f"out of time before fetching {hop.url}")
    # A client per hop: connections are pooled by address, and a TLS connection made for one
    # host name must not be reused for another host on the same address. trust_env=False: an
    # HTTP(S)_PROXY from the environment would connect somewhere this guard never checked.
    with httpx.Client(timeout=httpx.Timeout(remaining), follow_redirects=False, trust_env=False,
                      transport=BoundedTransport(verify, bound)) as client:
        failures = []
        for address in hop.addresses:
            try:
                response = client.send(_request(hop, address), stream=True)
            except httpx.ConnectError as exc:
                failures.append(f"{address}: {exc}")
                continue
            except httpx.TimeoutException:
                raise ToolError("Timeout", f"no response from {hop.url} within {remaining:.1f}s") from None
            except httpx.HTTPError as exc:
                raise ToolError("IOError", f"fetching {hop.url} failed: {exc}") from None
            try:
                yield response, address
            finally:
                response.close()
            return
        raise ToolError("IOError", f"cannot connect to {hop.url}: {'; '.join(failures)}")


def _request(hop: Hop, address: str) -> httpx.Request:
    headers = {"Host": hop.url.netloc.decode("ascii"), "User-Agent": USER_AGENT,
               "Accept": "text/html, text/*;q=0.9, application/json;q=0.9, */*;q=0.1"}
    if hop.literal:
        return httpx.Request("GET", hop.url, headers=headers)
    # The checked address goes in the URL; the host name stays in the Host header and, for
    # https, in SNI and certificate verification (httpcore's `sni_hostname` extension).
    extensions = {"sni_hostname": hop.host} if hop.url.scheme == "https" else {}
    return httpx.Request("GET", hop.url.copy_with(host=address), headers=headers, extensions=extensions)


def _read(response: httpx.Response, url: httpx.URL, max_bytes: int, end: float,
          cancel: Cancel | None) -> tuple[bytes, bool]:
    """At most `max_bytes` of the (decoded) body, and whether there was more."""
    body = bytearray()
    try:
        for chunk in response.iter_bytes():
            if cancel is not None and cancel.stopping():
                raise ToolError("Timeout", f"fetching {url} stopped: the run is stopping")
            # httpx's timeout is per read; a server sending a byte at a time must still stop at the deadline.
            if time.monotonic() > end:
                raise ToolError("Timeout", f"fetching {url} ran out of time after {len(body)} bytes")
            room = max_bytes - len(body)
            body += chunk[:room]
            if len(chunk) > room:
                return bytes(body), True
    except httpx.TimeoutException:
        raise ToolError("Timeout", f"reading {url} timed out after {len(body)} bytes") from None
    except httpx.HTTPError as exc:
        raise ToolError("IOError", f"reading {url} failed after {len(body)} bytes: {exc}") from None
    return bytes(body), False


def parse_content_type(value: str) -> tuple[str, str | None]:
    """`text/html; charset=UTF-8` → ("text/html", "UTF-8")."""
    media, _, params = value.partition(";")
    charset = None
    for param in params.split(";"):
        key, _, val = param.partition("=")
        if key.strip().lower() == "charset" and val.strip():
            charset = val.strip().strip("\"'")
    return media.strip().lower(), charset


def is_text_type(media: str) -> bool:
    return (media.startswith("text/") or media in HTML_TYPES or media in TEXT_TYPES
            or media.endswith(("+json", "+xml")))


def sniff(body: bytes) -> str:
    """A type for a response that named none: HTML, plain text, or binary (refused)."""
    head = body[:1024]
    if b"\x00" in head:
        raise ToolError("IOError", "the response has no content type and looks binary; not shown")
    start = head.lstrip().lower()
    return "text/html" if start.startswith((b"<!doctype html", b"<html")) else "text/plain"


def to_text(media: str, charset: str | None, body: bytes, url: str, cancel: Cancel | None = None) -> str:
    if media in HTML_TYPES:
        return html_to_text(body, charset, url, cancel)
    return decode(body, charset)


def decode(body: bytes, charset: str | None) -> str:
    try:
        return body.decode(charset or "utf-8", errors="replace")
    except LookupError:  # a charset Python does not know
        return body.decode("utf-8", errors="replace")


def html_to_text(html: bytes | str, charset: str | None, base_url: str, cancel: Cancel | None = None) -> str:
    """Readable Markdown: headings, lists, links (made absolute), code blocks, tables. `cancel` is asked at every
    element converted (Cancelled)."""
    soup = BeautifulSoup(html, "html.parser", from_encoding=charset if isinstance(html, bytes) else None)
    title = soup.title.get_text(" ", strip=True) if soup.title else ""
    for tag in soup(["head", "title", *DROPPED_TAGS]):
        tag.decompose()
    for name, attr in (("a", "href"), ("img", "src")):
        for node in soup.find_all(name):
            value = node.get(attr)
            if isinstance(value, str) and value.startswith("data:"):
                del node[attr]  # inline images: kilobytes of base64 the model cannot use
            elif isinstance(value, str):
                node[attr] = urljoin(base_url, value)
    converter = _Converter(cancel, heading_style="ATX", bullets="-", escape_underscores=False,
                           escape_asterisks=False)
    text = converter.convert_soup(soup)
    text = re.sub(r"[ \t]+\n", "\n", text)
    text = re.sub(r"\n{3,}", "\n\n", text).strip()
    # The title leads unless the page's first heading already says the same.
    return f"# {title}\n\n{text}" if title and text.partition("\n")[0] != f"# {title}" else text


class _Converter(MarkdownConverter):
    """markdownify's converter, asking the Cancel at every element: a page of pathological HTML (deeply nested,
    huge) converts for minutes, and no step of it returns to the caller."""

    def __init__(self, cancel: Cancel | None, **options: Any) -> None:
        super().__init__(**options)
        self.cancel = cancel

    def process_element(self, node: Any, parent_tags: Any = None) -> Any:
        if self.cancel is not None:
            self.cancel.check()
        return super().process_element(node, parent_tags=parent_tags)  # type: ignore[misc]  # not in its stub


def _excerpt(media: str, charset: str | None, body: bytes, url: str) -> str:
    if media and not is_text_type(media):
        return f"[{len(body)} bytes of {media}]"
    text = " ".join(to_text(media, charset, body, url).split())
    return text[:ERROR_EXCERPT_CHARS] + ("…" if len(text) > ERROR_EXCERPT_CHARS else "")
