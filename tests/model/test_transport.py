"""The request path of runner/model/transport.py, through the real SDK over HTTP: the same body
and headers as `chat.completions.create`, the same response types, the same error types."""

from __future__ import annotations

import openai
import pytest

from runner.model.transport import create_chat_completion
from tests.fakes.openai_server import FakeOpenAI, error, hang, reply

MESSAGES = [{"role": "system", "content": "sys"}, {"role": "user", "content": "héllo ✓"},
            {"role": "assistant", "content": None,
             "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "x" * 100}]
TOOLS = [{"type": "function", "function": {"name": "read", "description": "d",
                                           "parameters": {"type": "object", "properties": {}}}}]


def client(fake: FakeOpenAI) -> openai.OpenAI:
    return openai.OpenAI(api_key="sk-test", base_url=fake.base_url, max_retries=0, timeout=60)  # only stops a hang


def test_the_body_is_what_the_sdk_would_send():
    with FakeOpenAI() as fake:
        fake.add(reply("a"), reply("b", calls=[("read", {"path": "x"})]))
        kwargs = {"model": "m", "messages": MESSAGES, "tools": TOOLS, "tool_choice": "auto", "timeout": 60.0}
        via_sdk = client(fake).chat.completions.create(**kwargs)
        ours = create_chat_completion(client(fake), **kwargs)
        assert fake.requests[0] == fake.requests[1]
        assert isinstance(ours, type(via_sdk)) and ours.choices[0].message.tool_calls[0].function.name == "read"


def test_streaming_yields_chunks():
    with FakeOpenAI() as fake:
        fake.add(reply("streamed answer"))
        stream = create_chat_completion(client(fake), model="m", messages=MESSAGES, stream=True,
                                        stream_options={"include_usage": True})
        chunks = list(stream)
        assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "streamed answer"
        assert chunks[-1].usage is not None and fake.requests[0]["stream"] is True


def test_errors_are_the_sdks():
    with FakeOpenAI() as fake:
        # The hang ends when the server closes: the answer never comes in time.
        fake.add(error(503, headers={"retry-after": "2"}), hang(600), reply("late"))
        with pytest.raises(openai.APIStatusError) as exc:
            create_chat_completion(client(fake), model="m", messages=MESSAGES)
        assert exc.value.status_code == 503 and exc.value.response.headers["retry-after"] == "2"
        with pytest.raises(openai.APITimeoutError):
            create_chat_completion(client(fake), model="m", messages=MESSAGES, timeout=0.5)
        assert len(fake.requests) == 2  # the client's own retries stay off
