"""Model parameters (issue 14): flags, the policy's `model` section and a trusted task's front matter,
sent in the request only when set, recorded in run_started, dropped for the run where refused."""

from __future__ import annotations

import json

from tests.fakes.openai_server import reply


def test_flags_reach_the_request_and_run_started(fake, workspace, agent_run):
    fake.add(reply("ok"))
    r = agent_run("--temperature", "0.2", "--top-p", "0.9", "--max-output-tokens", "256", "--seed", "7",
                  "--reasoning-effort", "low", "task.md")
    assert r.code == 0, r.stderr
    sent = fake.requests[0]
    assert (sent["temperature"], sent["top_p"], sent["max_tokens"], sent["seed"], sent["reasoning_effort"]) == (
        0.2, 0.9, 256, 7, "low")
    assert "max_completion_tokens" not in sent  # a base URL that is not OpenAI's: the field local servers read
    started = r.of_type("run_started")[0]
    assert started["model_params"] == {"temperature": 0.2, "top_p": 0.9, "max_output_tokens": 256, "seed": 7,
                                       "reasoning_effort": "low"}


def test_nothing_is_sent_unless_set_and_the_policy_and_front_matter_layer(fake, workspace, agent_run):
    fake.add(reply("plain"))
    r = agent_run("task.md")
    assert r.code == 0
    assert not {"temperature", "top_p", "max_tokens", "seed", "reasoning_effort"} & set(fake.requests[0])
    assert r.of_type("run_started")[0]["model_params"] is None

    (workspace / "p.jsonc").write_text(json.dumps({"extends": "default", "model": {"temperature": 1.5, "seed": 3}}))
    fake.add(reply("from the policy"))
    agent_run("--policy", "p.jsonc", "task.md")
    assert (fake.requests[-1]["temperature"], fake.requests[-1]["seed"]) == (1.5, 3)
    fake.add(reply("the flag wins"))
    agent_run("--policy", "p.jsonc", "--temperature", "0", "task.md")
    assert fake.requests[-1]["temperature"] == 0

    (workspace / "bad.jsonc").write_text('{"model": {"temprature": 1}}')
    bad = agent_run("--policy", "bad.jsonc", "task.md")
    assert bad.code == 2 and "bad.jsonc:1:" in bad.stderr and "temprature" in bad.stderr


def test_an_untrusted_task_may_lower_the_output_cap_but_not_set_sampling(fake, workspace, agent_run):
    (workspace / "t.md").write_text("---\nmax_output_tokens: 64\ntemperature: 2\n---\nDo it.\n")
    fake.add(reply("ok"))
    r = agent_run("--max-output-tokens", "512", "t.md")
    assert r.code == 0, r.stderr
    assert fake.requests[0]["max_tokens"] == 64 and "temperature" not in fake.requests[0]
    assert "ignored: temperature" in r.stderr


def test_a_refused_parameter_is_dropped_for_the_run(fake, workspace, agent_run):
    fake.rejects = {"seed"}
    fake.add(reply(calls=[("list", {})]), reply("done"))
    r = agent_run("--seed", "1", "--temperature", "0.5", "task.md")
    assert r.code == 0, r.stderr
    accepted = [q for q in fake.requests if "seed" not in q]
    assert len(accepted) == 2 and all(q["temperature"] == 0.5 for q in accepted)
