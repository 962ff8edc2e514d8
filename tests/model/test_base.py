"""The one shape of an assistant message, whatever shape the server sent; usage when a server
reports none; final answers that are tool calls written as text."""

from __future__ import annotations

import pytest

from runner.core.jsonutil import canonical, estimate_tokens
from runner.model.base import assistant_message, estimated_usage, reported, text_tool_call, usage_dict

TOOLS = ["read", "list", "grep", "bash"]


def test_arguments_as_an_object_become_canonical_json():
    message = assistant_message(None, [{"id": "c1", "name": "read", "arguments": {"path": "a", "limit": 5}}], 1)
    assert message["tool_calls"][0]["function"] == {"name": "read", "arguments": '{"limit":5,"path":"a"}'}


@pytest.mark.parametrize(("arguments", "expected"), [(None, ""), ("", ""), ('{"x": 1}', '{"x": 1}'), ([1], "[1]")])
def test_arguments_are_always_a_string(arguments, expected):
    message = assistant_message("", [{"name": "list", "arguments": arguments}], 3)
    call = message["tool_calls"][0]
    assert (call["id"], call["function"]["arguments"]) == ("call_3_0", expected)
    assert message["content"] is None


def test_content_parts_are_joined():
    parts = [{"type": "text", "text": "one "}, {"type": "text", "text": "two"}]
    assert assistant_message(parts, [], 1)["content"] == "one two"


def test_usage_from_a_dict_or_nothing():
    assert usage_dict({"prompt_tokens": 7, "completion_tokens": 2, "prompt_tokens_details": {"cached_tokens": 3}}) \
        == {"prompt_tokens": 7, "completion_tokens": 2, "cached_tokens": 3}
    assert usage_dict(None) == {"prompt_tokens": 0, "completion_tokens": 0, "cached_tokens": 0}
    assert usage_dict({"prompt_tokens": None, "completion_tokens": "x"})["completion_tokens"] == 0
    assert not reported(usage_dict(None)) and not reported(usage_dict({"prompt_tokens": 0}))
    assert reported(usage_dict({"prompt_tokens": 1}))


def test_estimated_usage_is_the_byte_estimate():
    messages = [{"role": "user", "content": "x" * 400}]
    tools = [{"type": "function", "function": {"name": "read"}}]
    reply = {"role": "assistant", "content": "y" * 40}
    usage = estimated_usage(messages, tools, reply)
    assert usage["prompt_tokens"] == estimate_tokens(len(canonical({"tools": tools, "messages": messages})))
    assert usage["completion_tokens"] == estimate_tokens(len(canonical(reply)))
    assert usage["cached_tokens"] == 0


@pytest.mark.parametrize(("text", "tool"), [
    ('{"name": "bash", "arguments": {"command": "ls"}}', "bash"),
    ('  {"name": "read", "parameters": {"path": "a"}}\n', "read"),
    ('```json\n{"name": "grep", "arguments": {"pattern": "x"}}\n```', "grep"),
    ('<tool_call>\n{"name": "list", "arguments": {}}\n</tool_call>', "list"),
    ('<tool_call>{"name": "list", "arguments": {}}', "list"),  # cut at the stop token
    ('<tool_call>{"name": "list", "arguments": {}}</tool_call>\n<tool_call>{"name": "read", "arguments": {}}'
     '</tool_call>', "list"),
    ('{"type": "function", "function": {"name": "read", "arguments": "{}"}}', "read"),
    ('{"tool_calls": [{"function": {"name": "bash", "arguments": "{}"}}]}', "bash"),
    ('[{"name": "read", "arguments": {"path": "a"}}]', "read"),
])
def test_tool_calls_written_as_text(text, tool):
    assert text_tool_call(text, TOOLS) == tool


@pytest.mark.parametrize("text", [
    None, "", "The answer is 4.", '{"name": "Ada", "age": 36}', '{"result": 4}', "[1, 2]",
    '{"name": "write", "arguments": {}}',  # not a tool of this run
    '{"name": "read"}',  # a name, but nothing that makes it a call
    '{"name": "bash", "arguments": {"command": "ls"}',  # not JSON
    'Run this: {"name": "bash", "arguments": {}}',  # prose around it: an answer that quotes a call
])
def test_answers_that_are_not_tool_calls(text):
    assert text_tool_call(text, TOOLS) is None
