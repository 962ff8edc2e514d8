"""Issue 34 item 5, through the real CLI: `web_search {query, limit}` against a scripted SearXNG-compatible
server on loopback. Offered only when AGENT_RUN_SEARCH_URL is set in the trusted environment; decided as
`web_search query:<q>` and the endpoint's `net:HOST:PORT` through the network allow-list as web_fetch is, so under
the shipped policies (every query allowed, no host) the first search is a denial with a replay command."""

from __future__ import annotations

import json
from collections.abc import Iterator
from http.server import ThreadingHTTPServer

import pytest

from tests.fakes.openai_server import reply
from tests.fakes.search_server import search_server

RESULTS = [{"title": f"Result {i}", "url": f"https://example.org/{i}", "content": f"snippet number {i}"}
           for i in range(1, 9)]
QUERY = "error E0502 cannot borrow"


@pytest.fixture
def searx() -> Iterator[ThreadingHTTPServer]:
    with search_server(RESULTS) as server:
        yield server


def _env(server: ThreadingHTTPServer) -> dict[str, str]:
    return {"AGENT_RUN_SEARCH_URL": f"http://127.0.0.1:{server.server_port}"}


def _names(r) -> list[str]:
    return [t["function"]["name"] for t in json.loads((r.run_dir / "tools.json").read_text())]


def test_web_search_is_offered_only_with_a_search_url(fake, workspace, agent_run, searx):
    fake.add(reply("done"))
    r = agent_run("task.md")
    assert r.code == 0, r.stderr
    assert "web_search" not in _names(r)
    fake.add(reply("done"))
    r = agent_run("task.md", env=_env(searx))
    assert r.code == 0, r.stderr
    names = _names(r)
    assert names[names.index("web_fetch") + 1] == "web_search"
    assert [t["function"]["name"] for t in fake.requests[-1]["tools"]] == names


def test_a_search_is_a_denial_until_its_host_is_allowed_then_works(fake, workspace, agent_run, searx):
    port = searx.server_port
    fake.add(reply(calls=[("web_search", {"query": QUERY, "limit": 3})]), reply("done"))
    r = agent_run("task.md", env=_env(searx))
    assert r.code == 3, r.stderr
    assert searx.queries == []
    [decision] = r.of_type("permission_decision")
    assert [(t["domain"], t["target"], t["decision"]) for t in decision["targets"]] == [
        ("web_search", f"query:{QUERY}", "allow"), ("network", f"net:127.0.0.1:{port}", "ask")]
    [denial] = r.summary["denials"]
    assert denial["approve"] == [f"network:net:127.0.0.1:{port}"] and "agent-run replay" in denial["replay"]
    assert r.summary["status"] == "denied"

    fake.add(reply(calls=[("web_search", {"query": QUERY, "limit": 3})]), reply("done"))
    r = agent_run("--approve", f"network:net:127.0.0.1:{port}", "task.md", env=_env(searx))
    assert r.code == 0, r.stderr
    assert searx.queries == [("/search", {"q": [QUERY], "format": ["json"]})]
    [result] = r.of_type("tool_result")
    assert result["ok"] and result["details"]["results"] == 3, result
    assert result["content"].startswith(f"3 results for {QUERY!r}:")
    assert "1. Result 1\n   https://example.org/1\n   snippet number 1" in result["content"]
    assert "Result 4" not in result["content"]
    assert r.summary["status"] == "success"
