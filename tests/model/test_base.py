"""The one shape of an assistant message, whatever shape the server sent; usage when a server
reports none. (Tool calls written as text: tests/model/test_text_calls.py.)"""

from __future__ import annotations

import pytest

from runner.core.jsonutil import canonical, estimate_tokens
from runner.model.base import assistant_message, estimated_usage, reported, usage_dict


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
