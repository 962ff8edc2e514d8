"""`agent-run run` end to end: the real CLI, the real openai SDK over HTTP to a
scripted server on loopback, real tools in a temp workspace."""

from __future__ import annotations

import json
import shlex

from tests.fakes.openai_server import drop, error, hang, reply


def test_success_reads_a_file_and_answers(fake, workspace, agent_run):
    (workspace / "notes.txt").write_text("alpha\nbeta\n")
    fake.add(reply(calls=[("read", {"path": "notes.txt"})]), reply("The file has 2 lines."))
    r = agent_run("task.md")
    assert r.code == 0, r.stderr
    assert r.stdout.strip() == "The file has 2 lines."
    tool_msg = fake.requests[1]["messages"][-1]
    assert tool_msg["role"] == "tool" and tool_msg["tool_call_id"] == "call_1_0"
    assert tool_msg["content"] == "1\talpha\n2\tbeta"
    s = r.summary
    assert (s["status"], s["exit_code"], s["turns"], s["tool_calls"], s["denials"]) == ("success", 0, 2, 1, [])
    by_model = s["usage"].pop("by_model")  # the one model's figures again, with where its price came from
    assert s["usage"].pop("price_source").startswith("genai-prices ")
    assert s["usage"] == {"prompt_tokens": 300, "completion_tokens": 20, "cached_tokens": 50, "total_tokens": 320,
                          "cost_usd": round((250 * 0.15 + 50 * 0.075 + 20 * 0.60) / 1e6, 6)}
    assert list(by_model) == s["models_used"] == ["gpt-4o-mini"] and s["model"] == "gpt-4o-mini"
    mini = by_model["gpt-4o-mini"]
    assert mini.pop("price_source") and mini == {"prompt_tokens": 300, "completion_tokens": 20,
                                                 "cost_usd": s["usage"]["cost_usd"]}
    assert (r.run_dir / "task.md").read_text() == "Do the thing.\n"
    assert json.loads((r.run_dir / "policy.json").read_text())["mode"] == "agent"
    assert (workspace / ".agent-run" / ".gitignore").read_text() == "*\n"


def test_run_subcommand_and_bare_task_are_the_same(fake, agent_run):
    fake.add(reply("one"), reply("two"))
    first, second = agent_run("run", "task.md"), agent_run("task.md")
    assert (first.code, first.stdout, second.code, second.stdout) == (0, "one\n", 0, "two\n")
    assert fake.requests[0]["messages"] == fake.requests[1]["messages"]


def test_events_are_complete_and_ordered(fake, workspace, agent_run):
    fake.add(reply(calls=[("list", {})]), reply("done"))
    r = agent_run("task.md")
    events = r.events
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert {e["run_id"] for e in events} == {r.summary["run_id"]}
    assert all(e["ts"].endswith("Z") and "T" in e["ts"] for e in events)
    types = [e["type"] for e in events]
    assert types == ["run_started", "model_request", "model_response", "tool_call", "permission_decision",
                     "tool_result", "model_request", "model_response", "run_finished"]
    req = r.of_type("model_request")[0]
    assert req["message_count"] == 2 and req["estimated_tokens"] > 0 and len(req["prompt_sha256"]) == 64
    resp = r.of_type("model_response")[0]
    assert resp["message"]["tool_calls"][0]["function"]["name"] == "list"
    assert resp["usage"]["prompt_tokens"] == 100 and resp["finish_reason"] == "tool_calls"
    decision = r.of_type("permission_decision")[0]
    for key in ("eventId", "sessionId", "mode", "decision", "permissionDomain", "targets", "rulePattern",
                "timestamp"):
        assert key in decision
    assert decision["decision"] == "allow" and decision["permissionDomain"] == "read"
    assert decision["targets"][0]["target"] == "workspace:."
    result = r.of_type("tool_result")[0]
    assert result["ok"] is True and result["bytes"] > 0 and len(result["sha256"]) == 64
    assert r.of_type("run_finished")[0]["exit_code"] == 0


def test_prompt_prefix_is_byte_stable(fake, workspace, agent_run):
    (workspace / "a.txt").write_text("x")
    fake.add(reply(calls=[("read", {"path": "a.txt"})]), reply(calls=[("list", {})]), reply("done"))
    assert agent_run("task.md").code == 0
    bodies = [json.dumps(r["messages"], sort_keys=True) for r in fake.requests]
    for prev, nxt in zip(fake.requests, fake.requests[1:], strict=False):
        assert nxt["messages"][: len(prev["messages"])] == prev["messages"]
        assert nxt["tools"] == prev["tools"]
    assert bodies[1].startswith(bodies[0][:-1])
    assert [t["function"]["name"] for t in fake.requests[0]["tools"]] == [
        "read", "list", "glob", "grep", "write", "edit", "delete", "move", "bash", "web_fetch", "memory_search",
        "todo", "task"]  # task: the default policy asks for subagents (a denial headless, with a replay command)


def test_ask_is_a_structured_denial_and_exit_3(fake, workspace, agent_run):
    fake.add(reply(calls=[("bash", {"command": "echo hi"})]), reply("could not run it"))
    r = agent_run("task.md")
    assert r.code == 3, r.stderr
    err = json.loads(fake.requests[1]["messages"][-1]["content"])["error"]
    assert err["type"] == "ApprovalRequired"
    assert err["domain"] == "bash" and err["target"] == "shell:echo hi"
    denial = r.summary["denials"][0]
    assert err["replay"] == denial["rerun"]
    assert denial["replay"] == f"agent-run replay .agent-run/runs/{r.run_dir.name} --call call_1_0 --approve"
    assert denial["call_id"] == "call_1_0" and denial["tool"] == "bash" and denial["target"] == "shell:echo hi"
    assert denial["rule"]["pattern"] == "shell:*"
    assert denial["approve"] == ["bash:shell:echo hi"]
    assert "--approve 'bash:shell:echo hi'" in denial["rerun"]
    assert r.summary["status"] == "denied"
    assert not (workspace / "hi").exists()


def test_rerun_command_grants_the_call(fake, workspace, agent_run):
    fake.add(reply(calls=[("bash", {"command": "echo hi > out.txt"})]), reply("denied"))
    first = agent_run("task.md")
    assert first.code == 3
    argv = shlex.split(first.summary["denials"][0]["rerun"])
    assert argv[0] == "agent-run"
    fake.add(reply(calls=[("bash", {"command": "echo hi > out.txt"})]), reply("ok"))
    second = agent_run(*argv[1:])
    assert second.code == 0, second.stderr
    assert (workspace / "out.txt").read_text() == "hi\n"


def test_explicit_deny_is_tool_not_allowed(fake, workspace, agent_run):
    fake.add(reply(calls=[("write", {"path": "x.txt", "content": "no"})]), reply("ok"))
    r = agent_run("--policy", "strict", "task.md")
    assert r.code == 3
    err = json.loads(fake.requests[1]["messages"][-1]["content"])["error"]
    assert err["type"] == "ToolNotAllowed"
    assert not (workspace / "x.txt").exists()


def test_symlink_out_of_workspace_is_an_fs_target(fake, workspace, tmp_path, agent_run):
    outside = tmp_path / "secret.txt"
    outside.write_text("top secret")
    (workspace / "link.txt").symlink_to(outside)
    fake.add(reply(calls=[("read", {"path": "link.txt"}), ("read", {"path": "../secret.txt"})]), reply("ok"))
    r = agent_run("task.md")
    assert r.code == 3
    targets = [d["targets"][0]["target"] for d in r.of_type("permission_decision")]
    assert targets == [f"fs:{outside.resolve()}"] * 2
    for msg in fake.requests[1]["messages"][-2:]:
        assert "top secret" not in msg["content"]
        assert json.loads(msg["content"])["error"]["type"] == "ApprovalRequired"


def test_malformed_tool_calls_become_errors_the_model_can_act_on(fake, workspace, agent_run):
    fake.add(
        reply(calls=[("read", '{"path": "a.txt"'), ("nope", {}), ("read", {"path": 3}), ("read", "[1]")]),
        reply("fixed"),
        reply("fixed"),  # "fixed" with no file changed is refused once (--answer-nudges); said again, it stands
    )
    r = agent_run("task.md")
    assert r.code == 0, r.stderr
    assert [e["reason"] for e in r.of_type("answer_refused")] == ["claimed_change"]
    errors = [json.loads(m["content"])["error"] for m in fake.requests[1]["messages"][-4:]]
    assert [e["type"] for e in errors] == ["InvalidArguments", "UnknownTool", "InvalidArguments",
                                           "InvalidArguments"]
    assert "not valid JSON" in errors[0]["message"]
    assert "read" in errors[1]["message"]
    assert "path" in errors[2]["message"]
    assert [e["error_type"] for e in r.of_type("tool_result")] == [e["type"] for e in errors]


def test_missing_tool_call_ids_are_filled_deterministically(fake, workspace, agent_run):
    fake.add(reply(calls=[("list", {})], omit_ids=True), reply("done"))
    r = agent_run("task.md")
    assert r.code == 0
    assert fake.requests[1]["messages"][-1]["tool_call_id"] == "call_1_0"


def test_bash_that_reads_stdin_does_not_hang(fake, workspace, agent_run):
    fake.add(reply(calls=[("bash", {"command": "read line; echo got:$line; cat; echo end"})]), reply("ok"))
    r = agent_run("--approve", "bash:shell:*", "task.md")  # a blocked read would end at bash's timeout, output-less
    assert r.code == 0, r.stderr
    assert fake.requests[1]["messages"][-1]["content"] == "got:\nend\n"


def test_bash_nonzero_exit_is_exit_non_zero(fake, workspace, agent_run):
    fake.add(reply(calls=[("bash", {"command": "echo oops >&2; exit 7"})]), reply("ok"))
    r = agent_run("--approve", "bash:shell:*", "task.md")
    err = json.loads(fake.requests[1]["messages"][-1]["content"])["error"]
    assert (err["type"], err["exit_code"], err["output"]) == ("ExitNonZero", 7, "oops\n")
    assert r.code == 0
    result = r.of_type("tool_result")[0]
    assert (result["ok"], result["error_type"], result["details"]["exit_code"]) == (False, "ExitNonZero", 7)


def test_streaming_gives_the_same_conversation(fake, workspace, agent_run):
    (workspace / "a.txt").write_text("streamed")
    fake.add(reply("thinking", calls=[("read", {"path": "a.txt"})]), reply("The answer is streamed."))
    r = agent_run("--stream", "task.md")
    assert r.code == 0, r.stderr
    assert all(req.get("stream") for req in fake.requests)
    assert r.stdout.strip() == "The answer is streamed."
    assistant = fake.requests[1]["messages"][2]
    assert assistant["content"] == "thinking"
    assert json.loads(assistant["tool_calls"][0]["function"]["arguments"]) == {"path": "a.txt"}
    assert r.summary["usage"]["prompt_tokens"] == 300


def test_429_then_success_is_retried(fake, workspace, agent_run):
    fake.add(error(429, {"Retry-After": "0"}), error(503), reply("fine"))
    r = agent_run("task.md")
    assert r.code == 0, r.stderr
    retries = r.of_type("model_retry")
    assert [e["error"] for e in retries] == ["HTTP 429", "HTTP 503"]
    assert retries[0]["delay_s"] == 0
    assert len(fake.requests) == 3


def test_dropped_connection_is_retried(fake, workspace, agent_run):
    fake.add(drop(), reply("after the drop"))
    r = agent_run("task.md")
    assert r.code == 0, r.stderr
    assert [e["error"] for e in r.of_type("model_retry")] == ["APIConnectionError"]
    assert r.stdout.strip() == "after the drop"


def test_unreachable_endpoint_is_a_model_error_naming_the_url(fake, workspace, agent_run):
    import socket

    with socket.socket() as sock:  # a port nothing listens on once this closes
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    r = agent_run("task.md", env={"OPENAI_BASE_URL": url, "AGENT_RUN_MAX_RETRIES": "0"})
    assert r.code == 6, r.stderr
    assert r.summary["status"] == "model_error"
    assert "APIConnectionError" in r.summary["reason"] and f"connecting to {url}/" in r.summary["reason"]


def test_persistent_5xx_is_model_error_exit_6(fake, workspace, agent_run):
    fake.add(*[error(500)] * 3)
    r = agent_run("task.md", env={"AGENT_RUN_MAX_RETRIES": "2"})
    assert r.code == 6
    assert r.summary["status"] == "model_error" and "after 3 attempts" in r.summary["reason"]
    assert len(fake.requests) == 3


def test_auth_error_is_not_retried(fake, workspace, agent_run):
    fake.add(error(401), reply("never"))
    r = agent_run("task.md")
    assert r.code == 6 and len(fake.requests) == 1
    assert "401" in r.summary["reason"]


def test_max_turns_is_budget_exhausted_exit_5(fake, workspace, agent_run):
    fake.add(*[reply(calls=[("list", {})])] * 3)
    r = agent_run("--max-turns", "2", "task.md")
    assert r.code == 5
    assert r.summary["status"] == "budget_exhausted" and r.summary["turns"] == 2
    assert len(fake.requests) == 2


def test_timeout_is_budget_exhausted_exit_5(fake, workspace, agent_run):
    # The sleep outlasts the run's --timeout 10 sixty times over: had the timeout not cut it, the sleep would
    # end, "never" would answer and the run would succeed. The process timeout only stops a hang. Nothing
    # here depends on how fast the machine is: a run so slow that its clock ran out before the first request
    # still ends the same way, and the model never hears back either way.
    fake.add(reply(calls=[("bash", {"command": "sleep 600"})]), reply("never"))
    r = agent_run("--timeout", "10", "--approve", "bash:shell:sleep *", "task.md", timeout=300)
    assert r.code == 5, r.stderr
    assert r.summary["status"] == "budget_exhausted" and "timeout" in r.summary["reason"]
    assert len(fake.requests) <= 1 and r.summary.get("answer") != "never"
    results = r.of_type("tool_result")
    assert all(not e["ok"] for e in results)  # a bash call that started was cut, not finished


def test_timeout_during_a_model_call_is_budget_exhausted(fake, workspace, agent_run):
    # The server answers only when the test is over: a run that ends at all was ended by its --timeout.
    fake.add(hang(600), reply("too late"))
    r = agent_run("--timeout", "2", "task.md", timeout=120)
    assert r.code == 5, r.stderr
    assert r.summary["status"] == "budget_exhausted" and "timeout" in r.summary["reason"]


def test_cut_off_answer_is_failed_exit_1(fake, workspace, agent_run):
    fake.add(reply("half an ans", finish="length"))
    r = agent_run("task.md")
    assert r.code == 1
    assert r.summary["status"] == "failed" and "finish_reason=length" in r.summary["reason"]


def test_usage_errors_exit_2(fake, workspace, agent_run):
    assert agent_run("missing.md").code == 2
    assert agent_run("--max-turns", "0", "task.md").code == 2
    assert agent_run("--bogus", "task.md").code == 2
    assert fake.requests == []


def test_broken_policy_exits_2_with_location_before_any_model_call(fake, workspace, agent_run):
    (workspace / "p.jsonc").write_text('{\n  "permission": {"rules": [\n    {"domain": "read", "pattern": "**", '
                                       '"decision": "alow"}]}}\n')
    r = agent_run("--policy", "p.jsonc", "task.md")
    assert r.code == 2
    assert f"{workspace / 'p.jsonc'}:3:" in r.stderr and "alow" in r.stderr
    assert fake.requests == []
    assert r.summary["status"] == "usage_error" and r.of_type("run_finished")[0]["exit_code"] == 2


def test_task_from_stdin(fake, workspace, agent_run):
    fake.add(reply("from stdin"))
    r = agent_run("-", input="Summarize nothing.\n")
    assert r.code == 0
    assert fake.requests[0]["messages"][1] == {"role": "user", "content": "Summarize nothing.\n"}


def test_json_output_format_prints_the_summary(fake, workspace, agent_run):
    fake.add(reply("hello"))
    r = agent_run("--output-format", "json", "task.md")
    assert r.code == 0
    out = json.loads(r.stdout)
    assert out == r.summary


def test_quiet_prints_no_progress(fake, workspace, agent_run):
    fake.add(reply(calls=[("list", {})]), reply("hello"))
    r = agent_run("-q", "task.md")
    assert (r.code, r.stderr, r.stdout.strip()) == (0, "", "hello")
    fake.add(reply(calls=[("list", {})]), reply("hello"))
    r = agent_run("task.md")
    assert "[turn 1]" in r.stderr and "list" in r.stderr and "[allow]" in r.stderr
