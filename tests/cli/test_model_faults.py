"""Real endpoints and real failures (issue 12): every fault a model server can produce ends
in the right exit code, on time, with a complete run directory. The real CLI, the real
openai SDK, and a loopback server that produces the fault."""

from __future__ import annotations

import json

import pytest

from tests.cli.ending import ended_with
from tests.fakes.openai_server import NO_USAGE, empty_stream, error, raw, reply, trickle, truncated_stream

RETRIES_2 = {"AGENT_RUN_MAX_RETRIES": "2"}


# --- streams that end without an answer -------------------------------------------


def test_stream_closed_mid_answer_is_retried_then_model_error(fake, agent_run):
    fake.add(*[truncated_stream("The answer is 4")] * 3)
    r = agent_run("--stream", "task.md", env=RETRIES_2)
    s = ended_with(r, 6, "model_error")
    assert "finish_reason" in s["reason"] and "after 3 attempts" in s["reason"]
    assert len(r.of_type("model_retry")) == 2
    assert "The answer is 4" not in r.stdout


def test_stream_closed_mid_answer_then_a_whole_answer(fake, agent_run):
    fake.add(truncated_stream("The answ"), reply("The answer is 4."))
    r = agent_run("--stream", "task.md")
    ended_with(r, 0, "success")
    assert r.stdout.strip() == "The answer is 4."
    assert [e["turn"] for e in r.of_type("model_retry")] == [1]


def test_empty_stream_is_a_model_error(fake, agent_run):
    fake.add(*[empty_stream()] * 3)
    r = agent_run("--stream", "task.md", env=RETRIES_2)
    s = ended_with(r, 6, "model_error")
    assert "after 3 attempts" in s["reason"]


# --- final answers that are not answers ------------------------------------------


def test_empty_answer_is_told_once_then_failed(fake, agent_run):
    fake.add(reply(""), reply("   "))
    r = agent_run("task.md")
    s = ended_with(r, 1, "failed")
    assert "empty" in s["reason"]
    nudge = fake.requests[1]["messages"][-1]
    assert nudge["role"] == "user" and "empty" in nudge["content"]
    assert fake.requests[1]["messages"][:-2] == fake.requests[0]["messages"]  # append-only


def test_empty_answer_then_a_real_one_succeeds(fake, agent_run):
    fake.add(reply(""), reply("done"))
    r = agent_run("task.md")
    ended_with(r, 0, "success")
    assert r.stdout.strip() == "done"


# A call written as text that can run is run (tests/cli/test_text_tool_calls.py); these cannot.
@pytest.mark.parametrize("text", [
    '<tool_call>\n{"name": "list", "arguments": {}\n</tool_call>',  # not JSON
    '```json\n{"name": "read", "arguments": [1]}\n```',  # arguments that are no object
])
def test_tool_call_written_as_text_is_told_once_then_failed(fake, agent_run, text):
    fake.add(reply(text), reply(text))
    r = agent_run("--stream", "task.md")
    s = ended_with(r, 1, "failed")
    assert "tool call" in s["reason"]
    nudge = fake.requests[1]["messages"][-1]
    assert nudge["role"] == "user" and "tool_calls" in nudge["content"]
    assert fake.requests[1]["messages"][-2]["content"] == text


def test_tool_call_as_text_then_a_real_call_succeeds(fake, workspace, agent_run):
    (workspace / "a.txt").write_text("alpha")
    fake.add(reply('<tool_call>{"name": "nope", "arguments": {"path": "a.txt"}}</tool_call>'),
             reply(calls=[("read", {"path": "a.txt"})]), reply("alpha it is"))
    r = agent_run("task.md")
    ended_with(r, 0, "success")
    assert r.stdout.strip() == "alpha it is"


@pytest.mark.parametrize("text", ['{"name": "Ada", "age": 36}', '{"result": 4}', "[1, 2]", "bash"])
def test_json_that_names_no_tool_is_an_answer(fake, agent_run, text):
    fake.add(reply(text))
    r = agent_run("task.md")
    ended_with(r, 0, "success")
    assert r.stdout.strip() == text


# --- usage a server does not report ----------------------------------------------


def test_max_tokens_holds_when_the_server_reports_no_usage(fake, agent_run):
    fake.add(*[reply(calls=[("list", {})], usage=NO_USAGE)] * 6, reply("done", usage=NO_USAGE))
    r = agent_run("--stream", "--max-tokens", "3000", "task.md")
    s = ended_with(r, 5, "budget_exhausted")
    assert s["usage"]["estimated"] is True
    assert s["usage"]["prompt_tokens"] > 0 and s["usage"]["completion_tokens"] > 0
    assert s["usage"]["total_tokens"] <= 3000
    assert len(fake.requests) < 6
    assert all(e["usage"]["prompt_tokens"] > 0 for e in r.of_type("model_response"))


def test_reported_usage_is_not_marked_estimated(fake, agent_run):
    fake.add(reply("done"))
    r = agent_run("--stream", "task.md")
    s = ended_with(r, 0, "success")
    assert not s["usage"].get("estimated")
    assert fake.requests[0]["stream_options"] == {"include_usage": True}


def test_a_server_that_refuses_stream_options(fake, agent_run):
    fake.rejects = {"stream_options"}
    fake.add(reply(calls=[("list", {})]), reply("done"))
    r = agent_run("--stream", "task.md")
    ended_with(r, 0, "success")
    assert [("stream_options" in q) for q in fake.requests] == [True, False, False]  # remembered for the run


# --- tools a server may drop -----------------------------------------------------


def test_tool_choice_auto_is_sent_with_tools(fake, agent_run):
    fake.add(reply("done"))
    ended_with(agent_run("task.md"), 0, "success")
    assert fake.requests[0]["tool_choice"] == "auto"


def test_a_server_that_refuses_tool_choice(fake, agent_run):
    fake.rejects = {"tool_choice"}
    fake.add(reply(calls=[("list", {})]), reply("done"))
    r = agent_run("task.md")
    ended_with(r, 0, "success")
    assert [("tool_choice" in q) for q in fake.requests] == [True, False, False]
    assert fake.requests[1]["tools"]


def test_prompt_tokens_far_below_the_estimate_is_a_warning(fake, agent_run):
    fake.add(reply("a made-up answer", usage={"prompt_tokens": 50, "completion_tokens": 5, "total_tokens": 55}))
    r = agent_run("task.md")
    s = ended_with(r, 0, "success")
    assert any("prompt tokens" in w and "dropped the tools" in w for w in s["warnings"]), s.get("warnings")


def test_prompt_tokens_near_the_estimate_is_no_warning(fake, agent_run):
    fake.add(reply("fine"))
    first = agent_run("task.md")
    estimate = first.of_type("model_request")[0]["estimated_tokens"]
    fake.add(reply("fine", usage={"prompt_tokens": estimate // 2, "completion_tokens": 5}))
    s = ended_with(agent_run("task.md"), 0, "success")
    assert s["warnings"] == []


# --- replies of the wrong shape --------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
def test_arguments_as_a_json_object_are_accepted(fake, workspace, agent_run, stream):
    (workspace / "a.txt").write_text("alpha\n")
    fake.add(reply(calls=[("read", {"path": "a.txt"})], args_as_object=True), reply("done"))
    r = agent_run(*(["--stream"] if stream else []), "task.md")
    ended_with(r, 0, "success")
    arguments = r.of_type("model_response")[0]["message"]["tool_calls"][0]["function"]["arguments"]
    assert arguments == '{"path":"a.txt"}'
    assert fake.requests[1]["messages"][-2]["tool_calls"][0]["function"]["arguments"] == arguments
    assert fake.requests[1]["messages"][-1]["content"] == "1\talpha"


NOT_A_COMPLETION = [
    ("<html><body><h1>502 Bad Gateway</h1></body></html>", "text/html"),
    ('{"id": "chatcmpl-1", "choices": [{"index": 0, "message": {"role": "assist', "application/json"),
    (json.dumps({"id": "c", "object": "chat.completion", "choices": [{"index": 0, "finish_reason": "stop"}]}),
     "application/json"),
    (json.dumps({"id": "c", "object": "chat.completion", "choices": []}), "application/json"),
    ("", "application/json"),
]


@pytest.mark.parametrize(("body", "content_type"), NOT_A_COMPLETION)
def test_a_200_that_is_not_a_completion_is_retried_then_model_error(fake, agent_run, body, content_type):
    fake.add(*[raw(200, body, content_type)] * 3)
    r = agent_run("task.md", env=RETRIES_2)
    s = ended_with(r, 6, "model_error")
    assert "after 3 attempts" in s["reason"]
    assert len(fake.requests) == 3


def test_a_200_that_is_not_a_completion_then_a_good_one(fake, agent_run):
    fake.add(raw(200, "<html>proxy error</html>", "text/html"), reply("fine"))
    r = agent_run("task.md")
    ended_with(r, 0, "success")
    assert len(r.of_type("model_retry")) == 1


@pytest.mark.parametrize("events", ['data: {"id": "x", "choices": [{"del\n\n',
                                    'data: {"error": {"message": "slot unavailable"}}\n\n'])
def test_a_stream_that_fails_inside_is_retried(fake, agent_run, events):
    fake.add(*[raw(200, events, "text/event-stream")] * 3)
    r = agent_run("--stream", "task.md", env=RETRIES_2)
    s = ended_with(r, 6, "model_error")
    assert "after 3 attempts" in s["reason"]


# --- deadlines -------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
def test_a_trickling_server_cannot_hold_the_run_past_its_timeout(fake, agent_run, stream):
    # The trickle goes on until the test is over (the server's close ends it): a run that ends at all, inside
    # the process timeout (which only stops a hang), was ended by its own --timeout cutting the response.
    fake.add(trickle(600, 0.3), reply("too late"))
    r = agent_run(*(["--stream"] if stream else []), "--timeout", "3", "task.md", timeout=120)
    s = ended_with(r, 5, "budget_exhausted")
    assert "timeout" in s["reason"]
    assert len(fake.requests) == 1  # no retry after the cut: the run's time was up


# --- big answers -----------------------------------------------------------------


def test_a_5mb_streamed_answer_is_assembled(fake, workspace, agent_run):
    # Linear time is bench/bench_stream.py's to measure; the timeout only stops a hang (the run takes ~12 s on
    # 2 idle cores).
    big = "x" * 5_000_000
    fake.add(reply("here", calls=[("write", {"path": "big.txt", "content": big})], piece=100),
             reply("y" * 2_000_000, piece=100))
    r = agent_run("--stream", "task.md", timeout=600)
    ended_with(r, 0, "success")
    assert len(r.stdout.strip()) == 2_000_000


# --- argument errors the model can read ------------------------------------------


def test_an_out_of_range_argument_reads_plainly(fake, agent_run):
    fake.add(reply(calls=[("bash", {"command": "true", "timeout_s": -1})]), reply("ok"))
    r = agent_run("task.md")
    ended_with(r, 0, "success")
    err = json.loads(fake.requests[1]["messages"][-1]["content"])["error"]
    assert err["type"] == "InvalidArguments"
    assert err["message"] == "timeout_s must be at least 0 (got -1)"


def test_a_zero_timeout_means_the_default(fake, agent_run):
    """Small models send `timeout_s: 0` for "no particular limit": the call runs under the default."""
    fake.add(reply(calls=[("bash", {"command": "echo ran", "timeout_s": 0})]), reply("ok"))
    r = agent_run("--approve", "bash:shell:echo *", "task.md")
    ended_with(r, 0, "success")
    assert fake.requests[1]["messages"][-1]["content"].startswith("ran")


@pytest.mark.parametrize("stream", [False, True])
def test_a_server_whose_template_fails_on_null_content_serves_a_tool_using_run(fake, workspace, agent_run, stream):
    """llama-cpp-python's chat templates fail on an assistant message with content null (HTTP 500 on every
    second request of a tool-using run): what is sent carries "" there; the record keeps the reply as received."""
    fake.null_content_fails = True
    fake.add(reply(calls=[("list", {})]), reply("done"))
    r = agent_run("--stream" if stream else "--no-stream", "task.md")
    assert r.code == 0, r.stderr
    assert r.stdout.strip() == "done" and len(fake.requests) == 2
    sent = [m for m in fake.requests[1]["messages"] if m["role"] == "assistant"]
    assert sent and sent[0]["content"] == "" and sent[0]["tool_calls"]
    assert r.of_type("model_response")[0]["message"]["content"] is None


def test_a_server_error_that_outlasts_the_retries_names_the_servers_words(fake, agent_run):
    body = {"error": {"message": "can only concatenate str (not \"NoneType\") to str", "type": "internal_server_error"}}
    fake.add(*[error(500, body=body)] * 3)
    r = agent_run("task.md", env=RETRIES_2)
    assert r.code == 6, r.stderr
    assert "HTTP 500" in r.summary["reason"] and "can only concatenate str" in r.summary["reason"]
