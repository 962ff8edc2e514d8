"""The fallback model through the real CLI: one loopback server (the Decisions: same endpoint and key) that is
down for model `a` and serves model `b`. After the retries for a call run out on a server error, a dropped
connection or an overload, the run goes on with the next --fallback-model and stays on it; an auth or
bad-request error is never a reason to fall back."""

from __future__ import annotations

import json

import pytest

from tests.fakes.openai_server import drop, error, reply

ALLOW_TASK = """{ "extends": "default",
  "risk": { "rules": [ { "domain": "task", "pattern": "agent:**", "level": "medium" } ] }, "permission": { "rules": [
  { "domain": "task", "pattern": "agent:**", "decision": "allow" } ] } }"""
CHILD = "CHILD-SUBTASK"  # in the child's prompt: its requests are routed to its own script
FAST = {"AGENT_RUN_MAX_RETRIES": "1"}  # two attempts per request: the retries are not what is tested here


def _down(fake, model, step, after=0):
    """Requests naming `model` are answered with `step`, outside the script (after its first `after` requests):
    its server is down, the others' is not. Recorded in `fake.requests` like every request."""
    seen = []
    script_step = fake._next

    def next_step(body):
        if body.get("model") == model:
            seen.append(1)
            if len(seen) > after:
                with fake._lock:
                    fake.requests.append(body)
                return 0, step
        return script_step(body)

    fake._next = next_step


def test_a_server_error_falls_back_to_the_next_model_and_stays_on_it(fake, workspace, agent_run):
    (workspace / "p.jsonc").write_text(ALLOW_TASK, encoding="utf-8")
    _down(fake, "a", error(503, body={"error": {"message": "overloaded", "type": "server_error"}}))
    fake.add(reply(calls=[("task", {"description": "look", "prompt": f"{CHILD}: list the files"})]), reply("done"))
    fake.route(CHILD, reply("child answer"))
    # The flag wins over the environment.
    r = agent_run("--policy", "p.jsonc", "--model", "a", "--fallback-model", "b", "task.md",
                  env={**FAST, "AGENT_RUN_FALLBACK_MODELS": "x,y"})
    assert r.code == 0, r.stderr
    [fallback] = r.of_type("model_fallback")
    assert (fallback["turn"], fallback["from"], fallback["to"]) == (1, "a", "b")
    assert "HTTP 503" in fallback["reason"] and "overloaded" in fallback["reason"]
    assert "prompt cache starts over" in fallback["reason"]
    # The same first request again, to b; then the run stays on b, and so does the child it starts.
    assert [q["model"] for q in fake.requests] == ["a", "a", "b", "b", "b"]
    assert fake.requests[2]["messages"] == fake.requests[0]["messages"]
    assert CHILD in json.dumps(fake.requests[3]["messages"])
    assert [e["model"] for e in r.of_type("subagent_started")] == ["b"]
    s = r.summary
    assert s["model"] == "a" and s["models_used"] == ["a", "b"]
    assert s["usage"]["by_model"] == {
        "a": {"prompt_tokens": 0, "completion_tokens": 0, "cost_usd": None, "price_source": None},
        "b": {"prompt_tokens": 400, "completion_tokens": 30, "cost_usd": None, "price_source": None}}
    assert any("prompt (prefix) cache started over" in w for w in s["warnings"])
    assert "agent-run: model a is down; going on with b" in r.stderr


@pytest.mark.parametrize("status", [401, 404])
def test_an_auth_or_bad_request_error_does_not_fall_back(fake, workspace, agent_run, status):
    _down(fake, "a", error(status))
    fake.add(reply("never"))
    r = agent_run("--model", "a", "--fallback-model", "b", "task.md", env=FAST)
    assert r.code == 6, r.stderr
    assert r.of_type("model_fallback") == [] and [q["model"] for q in fake.requests] == ["a"]
    assert f"HTTP {status}" in r.summary["reason"] and r.summary["models_used"] == ["a"]


def test_the_environment_names_the_fallbacks_when_the_first_one_is_down(fake, workspace, agent_run):
    _down(fake, "a", drop())  # the first model's server drops every connection
    fake.add(reply("done"))
    r = agent_run("--model", "a", "task.md", env={**FAST, "AGENT_RUN_FALLBACK_MODELS": " b , c"})
    assert r.code == 0, r.stderr
    assert [(f["from"], f["to"]) for f in r.of_type("model_fallback")] == [("a", "b")]
    assert "APIConnectionError" in r.of_type("model_fallback")[0]["reason"]
    assert r.summary["models_used"] == ["a", "b"] and r.stdout.strip() == "done"


def test_the_cost_budget_counts_every_model_at_its_own_price(fake, workspace, agent_run):
    (workspace / "p.jsonc").write_text(json.dumps({"extends": "default", "budget": {"prices": {
        "a": {"input": 1.0, "output": 0.0}, "b": {"input": 2.0, "output": 0.0}}}}), encoding="utf-8")
    million = {"prompt_tokens": 1_000_000, "completion_tokens": 0, "total_tokens": 1_000_000}
    half = {"prompt_tokens": 500_000, "completion_tokens": 0, "total_tokens": 500_000}
    _down(fake, "a", error(502), after=1)  # a serves turn 1, then its server goes down
    fake.add(reply(calls=[("list", {})], usage=million), reply(calls=[("list", {})], usage=half), reply("never"))
    r = agent_run("--policy", "p.jsonc", "--model", "a", "--fallback-model", "b", "--max-cost-usd", "1.5",
                  "task.md", env=FAST)
    assert r.code == 5, r.stderr  # $1 on a + $1 on b: over 1.5 (either alone is not)
    s = r.summary
    assert (s["budget"]["name"], s["budget"]["used"]) == ("max_cost_usd", 2.0)
    assert s["usage"]["cost_usd"] == 2.0
    assert s["usage"]["by_model"] == {
        "a": {"prompt_tokens": 1_000_000, "completion_tokens": 0, "cost_usd": 1.0, "price_source": "policy"},
        "b": {"prompt_tokens": 500_000, "completion_tokens": 0, "cost_usd": 1.0, "price_source": "policy"}}
    # A fallback model without a price cannot keep a cost budget: refused before any request.
    fake.requests.clear()
    r = agent_run("--policy", "p.jsonc", "--model", "a", "--fallback-model", "mystery", "--max-cost-usd", "1",
                  "task.md")
    assert r.code == 2 and "fallback model mystery" in r.summary["reason"] and fake.requests == []
