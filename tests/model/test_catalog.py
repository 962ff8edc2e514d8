"""Prices and context windows from genai-prices (the database shipped in the package), through the real CLI:
models the old hand-kept table lacked are priced, the policy's budget.prices still wins, an unknown model
under a cost budget is exit 2 naming the way out, and the cost budget still ends a run (exit 5)."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib.metadata import version

from tests.fakes.openai_server import reply

SOURCE = f"genai-prices {version('genai-prices')}"


def _usage(prompt: int, completion: int, cached: int = 0) -> dict:
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": cached}}


def _ok(r) -> None:
    assert all(isinstance(e, dict) and "type" in e for e in r.events)  # events.jsonl parses, line by line


def test_a_model_the_old_table_lacked_is_priced_from_genai_prices(fake, workspace, agent_run):
    # gemini-2.5-flash (through an OpenAI-compatible endpoint): $0.30 input, $0.03 cached, $2.50 output per 1M.
    fake.add(reply(calls=[("list", {})], usage=_usage(100_000, 1_000, cached=40_000)),
             reply("done", usage=_usage(120_000, 2_000)))
    r = agent_run("--model", "gemini-2.5-flash", "--max-cost-usd", "1", "task.md")
    assert r.code == 0, r.stderr
    _ok(r)
    usage = r.summary["usage"]
    expected = (60_000 * 0.30 + 40_000 * 0.03 + 1_000 * 2.50 + 120_000 * 0.30 + 2_000 * 2.50) / 1e6
    assert usage["cost_usd"] == round(expected, 6) and usage["price_source"] == SOURCE
    shown = agent_run("runs", "show", str(r.run_dir))  # says where the price came from (issue 42, item 10)
    assert f"cost ${usage['cost_usd']:.4f} (prices: {SOURCE})" in shown.stdout, shown.stdout


def test_policy_prices_override_the_database(fake, workspace, agent_run):
    (workspace / "p.jsonc").write_text(json.dumps({"extends": "default", "budget": {
        "prices": {"claude-sonnet-4-5": {"input": 1.0, "cachedInput": 0.5, "output": 2.0}}}}))
    fake.add(reply("done", usage=_usage(10_000, 1_000, cached=4_000)))
    r = agent_run("--policy", "p.jsonc", "--model", "claude-sonnet-4-5", "--max-cost-usd", "1", "task.md")
    assert r.code == 0, r.stderr
    _ok(r)
    assert r.summary["usage"]["cost_usd"] == round((6_000 * 1.0 + 4_000 * 0.5 + 1_000 * 2.0) / 1e6, 6)
    assert r.summary["usage"]["price_source"] == "policy"


def test_unknown_model_under_a_cost_budget_is_exit_2_naming_budget_prices(fake, workspace, agent_run):
    r = agent_run("--model", "my-own-finetune-7b", "--max-cost-usd", "1", "task.md")
    assert r.code == 2 and "budget.prices" in r.summary["reason"] and "my-own-finetune-7b" in r.summary["reason"]
    _ok(r)
    assert fake.requests == []
    fake.add(reply("done"))  # without a cost budget it runs, its cost unknown
    r = agent_run("--model", "my-own-finetune-7b", "task.md")
    assert r.code == 0 and r.summary["usage"]["cost_usd"] is None and r.summary["usage"]["price_source"] is None


def test_the_cost_budget_stops_a_run_at_the_long_context_rate(fake, workspace, agent_run):
    # claude-sonnet-4-5 bills a request over 200k prompt tokens at $6 (not $3) per 1M input, $22.50 output.
    fake.add(reply(calls=[("list", {})], usage=_usage(250_000, 1_000)), reply("never"))
    r = agent_run("--model", "claude-sonnet-4-5", "--max-cost-usd", "1", "task.md")
    assert r.code == 5, r.stderr
    _ok(r)
    b = r.summary["budget"]
    assert (b["name"], b["limit"], b["used"]) == ("max_cost_usd", 1.0, round((250_000 * 6 + 1_000 * 22.5) / 1e6, 6))
    assert r.summary["usage"]["price_source"] == SOURCE and len(fake.requests) == 1


def test_a_small_context_window_from_the_database_is_refused(fake, workspace, agent_run):
    r = agent_run("--model", "moonshot-v1-8k", "task.md")  # 8,192 tokens: under the runner's floor
    assert r.code == 2 and "8192-token context window" in r.summary["reason"], r.summary
    assert "genai-prices" in r.summary["reason"] and fake.requests == []


def test_lookups_use_the_shipped_data_and_no_network():
    # A fresh interpreter whose every connection attempt fails: the lookup works all the same.
    code = ("import socket\n"
            "def refuse(*a, **k): raise OSError('network used')\n"
            "socket.socket.connect = refuse; socket.create_connection = refuse; socket.getaddrinfo = refuse\n"
            "from runner.model.catalog import price_for, window_for\n"
            "p, s = price_for('claude-sonnet-4-5')\n"
            "print(p.input, p.cached_input, p.output, s, window_for('claude-sonnet-4-5'), price_for('nope'))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["3.0", "0.3", "15.0", "genai-prices", version("genai-prices"), "200000",
                                  "(None,", "None)"]
