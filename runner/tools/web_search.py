"""web_search: a query to the search endpoint the trusted environment names (AGENT_RUN_SEARCH_URL), a
SearXNG-compatible JSON API (`GET {url}/search?q=…&format=json`), the common self-hostable one.

Offered only when that variable is set (runner/tools/registry.py): no endpoint, no tool. A call is decided on
its `web_search` target `query:<q>` and on the endpoint's network target `net:HOST:PORT`, and the request goes
out exactly as web_fetch's does (runner/tools/web_fetch.py `fetch`: the address check and pinning of
runner/tools/ssrf.py, the network verdict of runner/policy/egress.py, each redirect's host decided again), so
the shipped policies, which allow every query but no host, make the first search a denial whose approval is
`network:net:HOST:PORT`. The results (title, URL, snippet) are text like any tool result: truncated and masked
on the way to the model and the log.
"""

from __future__ import annotations

import json
import time
from typing import Any
from urllib.parse import urlencode

from runner.core.outcome import UsageError
from runner.policy.egress import url_net_target
from runner.policy.model import Target
from runner.policy.targets import CredentialsInURL, InvalidURL, normalize_url, targets_for
from runner.tools.base import Tool, ToolContext, ToolError, ToolOutput
from runner.tools.web_fetch import DEFAULT_TIMEOUT_S, decode, exact_in, fetch

ENV = "AGENT_RUN_SEARCH_URL"
DEFAULT_LIMIT = 5
MAX_LIMIT = 20
MAX_QUERY_CHARS = 500
MAX_BODY_BYTES = 2 * 1024 * 1024  # a page of results; a larger answer is not a search result list
MAX_TITLE_CHARS = 200
MAX_SNIPPET_CHARS = 400


class WebSearch(Tool):
    name = "web_search"
    domain = "web_search"
    risk = "high"
    aliases = ("WebSearch",)
    offered = "configured"  # with AGENT_RUN_SEARCH_URL only
    concurrent = "read"  # changes neither the workspace nor the world: may run beside others
    description = f"Search the web: title, URL and snippet of the first limit results (default {DEFAULT_LIMIT}, " \
                  f"max {MAX_LIMIT})."
    schema = {
        "type": "object",
        "properties": {
            "query": {"type": "string", "minLength": 1},
            "limit": {"type": "integer", "minimum": 1},
        },
        "required": ["query"],
        "additionalProperties": False,
    }

    def __init__(self, base_url: str) -> None:
        """`base_url`: the endpoint as the trusted environment names it; refused (exit 2) when it is not an
        http(s) URL without credentials."""
        try:
            base = normalize_url(base_url)
        except (CredentialsInURL, InvalidURL) as exc:
            raise UsageError(f"{ENV}: {exc}") from None
        if url_net_target(base) is None:
            raise UsageError(f"{ENV}: not an http(s) URL: {base_url}")
        self.base = base.split("?", 1)[0].split("#", 1)[0].rstrip("/")

    def url(self, query: str) -> str:
        return f"{self.base}/search?{urlencode({'q': query, 'format': 'json'})}"

    def targets(self, args: dict[str, Any], ctx: ToolContext) -> list[Target]:
        query = _query(args)
        net = url_net_target(normalize_url(self.base))
        assert net is not None  # checked in __init__
        return [*targets_for("web_search", query, ctx.workspace), net]

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        query = _query(args)
        limit = max(1, min(int(args.get("limit") or DEFAULT_LIMIT), MAX_LIMIT))
        web = ctx.web or {}
        timeout = float(web.get("timeoutSeconds", DEFAULT_TIMEOUT_S))
        left = ctx.cancel.remaining()
        if left is not None:
            timeout = min(timeout, left)
        if timeout <= 0:
            raise ToolError("Timeout", "no time left in the run to search")
        got = fetch(self.url(query), allow_private=bool(web.get("allowPrivateNetworks", False)),
                    max_bytes=min(int(web.get("maxBytes", MAX_BODY_BYTES)), MAX_BODY_BYTES),
                    end=time.monotonic() + timeout, cancel=ctx.cancel,
                    authorize=(lambda u: _redirect(u, ctx)) if ctx.authorize else None, named_exactly=exact_in(ctx))
        if got.truncated:
            raise ToolError("IOError", f"the search endpoint's answer is over {MAX_BODY_BYTES} bytes; not read")
        try:
            data = json.loads(decode(got.body, got.charset))
        except (json.JSONDecodeError, RecursionError):
            raise ToolError("IOError", f"the search endpoint did not answer JSON ({got.media_type}); is "
                            f"{ENV} a SearXNG-compatible API with the json format enabled?") from None
        results = data.get("results") if isinstance(data, dict) else None
        if not isinstance(results, list):
            raise ToolError("IOError", "the search endpoint's JSON has no `results` list")
        shown = [r for r in results if isinstance(r, dict) and isinstance(r.get("url"), str)][:limit]
        details = {"results": len(shown), "available": len(results), "hops": got.hops}
        if not shown:
            return ToolOutput(f"[no results for {query!r}]", details)
        lines = [_render(i, r) for i, r in enumerate(shown, start=1)]
        return ToolOutput(f"{len(shown)} results for {query!r}:\n\n" + "\n\n".join(lines), details)


def _redirect(url: str, ctx: ToolContext) -> None:
    """A redirect of the endpoint is decided again on the host it leads to (the query was decided with the
    call), recorded under the call; ToolError when not allowed."""
    net = url_net_target(url)  # fetch hands it in canonical form
    if net is None:
        raise ToolError("IOError", f"the search endpoint redirected to {url}, which is not http(s)")
    assert ctx.authorize is not None
    ctx.authorize([net], ctx.call_id, ctx.call_tool)


def _query(args: dict[str, Any]) -> str:
    query = " ".join(str(args.get("query", "")).split())
    if not query:
        raise ToolError("InvalidArguments", "query is empty")
    if len(query) > MAX_QUERY_CHARS:
        raise ToolError("InvalidArguments", f"query is {len(query)} characters (limit {MAX_QUERY_CHARS})")
    return query


def _render(number: int, result: dict[str, Any]) -> str:
    title = _short(result.get("title"), MAX_TITLE_CHARS) or "(no title)"
    out = f"{number}. {title}\n   {result['url']}"
    snippet = _short(result.get("content"), MAX_SNIPPET_CHARS)
    return f"{out}\n   {snippet}" if snippet else out


def _short(value: Any, limit: int) -> str:
    text = " ".join(value.split()) if isinstance(value, str) else ""
    return text[:limit] + ("…" if len(text) > limit else "")
