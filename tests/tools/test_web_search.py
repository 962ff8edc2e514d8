"""web_search's own contract (issue 34 item 5): the endpoint from the trusted environment, the targets it is
decided on, results cut to `limit` (default 5, at most 20), an endpoint that does not answer JSON an IOError.
Through the CLI and the policy: tests/cli/test_web_search.py."""

from __future__ import annotations

import pytest

from runner.core.outcome import UsageError
from runner.tools.base import ToolError
from runner.tools.registry import core_tools
from runner.tools.web_search import WebSearch
from tests.fakes.search_server import search_server

RESULTS = [{"title": f"T{i}", "url": f"https://example.org/{i}", "content": "x" * 1000} for i in range(30)]


def test_the_endpoint_must_be_an_http_url_without_credentials():
    for bad in ("ftp://search.example", "https://user:pw@search.example", "search.example"):
        with pytest.raises(UsageError):
            WebSearch(bad)
    assert WebSearch("https://search.example/searx/").url("a b") == "https://search.example/searx/search?q=a+b&format=json"


def test_offered_only_with_an_endpoint_right_after_web_fetch():
    assert "web_search" not in core_tools().names
    names = core_tools(search_url="https://search.example").names
    assert names[names.index("web_fetch") + 1] == "web_search"


def test_decided_on_the_query_and_the_endpoints_host(ctx):
    targets = WebSearch("https://search.example:8443").targets({"query": "  rust   traits "}, ctx)
    assert [(t.domain, t.target) for t in targets] == [("web_search", "query:rust traits"),
                                                       ("network", "net:search.example:8443")]
    with pytest.raises(ToolError) as err:
        WebSearch("https://search.example").targets({"query": "   "}, ctx)
    assert err.value.type == "InvalidArguments"


def test_results_are_cut_to_the_limit_and_snippets_shortened(ctx):
    ctx.web = {"allowPrivateNetworks": True}
    with search_server(RESULTS) as server:
        tool = WebSearch(f"http://127.0.0.1:{server.server_port}")
        default = tool.run({"query": "q"}, ctx)
        most = tool.run({"query": "q", "limit": 100}, ctx)
    assert default.details["results"] == 5 and default.details["available"] == 30
    assert most.details["results"] == 20 and "20. T19" in most.content and "T20" not in most.content
    assert "x" * 400 + "…" in default.content and "x" * 401 not in default.content


def test_an_endpoint_that_does_not_answer_json_is_an_io_error(ctx):
    ctx.web = {"allowPrivateNetworks": True}
    with search_server([], body=b"<html>not json</html>") as server, pytest.raises(ToolError) as err:
        WebSearch(f"http://127.0.0.1:{server.server_port}").run({"query": "q"}, ctx)
    assert err.value.type == "IOError" and "SearXNG" in err.value.message
