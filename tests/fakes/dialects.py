"""Model servers' own request rules and reply shapes, plugged into the fake OpenAI server.

`use(server, name)` makes `tests/fakes/openai_server.py`'s FakeOpenAI validate every request the way
that server does (the same status, the same error body) and reshape its scripted replies the way that
server sends them. Where the rules come from is said per dialect; docs/providers.md names the tests.

- "openai": the reference rules (vendor documentation, not validated): a `tool` message answers a call
  of the assistant message before it, every call is answered before the conversation goes on,
  `tool_choice` only with `tools`, `stream_options` only when streaming, `arguments` a string.
- "llama-cpp-python" (`python -m llama_cpp.server --chat_format chatml-function-calling`, as
  ../shared/realmodel starts it) and "llama-cpp-python-jinja" (no --chat_format: the GGUF's own
  template, here Qwen2.5's): from llama-cpp-python 0.3.36's source. The request is validated by its
  pydantic message types (an assistant `content: null` fails there) and then rendered through the chat
  template in a sandboxed jinja2 environment set up as the server sets it up (tests/fakes/templates/:
  the template texts are data). Any failure is HTTP 500 `internal_server_error` with the exception's
  text, as its RouteErrorHandler answers. Streamed replies carry no usage. With chatml-function-calling
  a streamed `tool_choice: "auto"` reply that calls a tool raises "Automatic streaming tool choice is not
  supported" after the 200 headers were sent: the client sees the stream cut before its first chunk
  (the message is only in the server's log); `tool_choice: "required"` fails its assert (HTTP 500, an empty
  message). That format never renders `tool` messages: the model
  never sees a tool's result (`prompts` keeps each rendered prompt to show it).
- "vllm": from vLLM's source (entrypoints/openai/protocol.py ChatCompletionRequest validators,
  chat_utils._postprocess_messages, serving_chat): `stream_options` only with `stream`, `tool_choice`
  only with `tools` and one of none/auto/required/named, `"auto"` only when the server was started with
  --enable-auto-tool-choice (`auto_tools=False` plays one that was not), every assistant tool call's
  `arguments` must parse as JSON; HTTP 400 `BadRequestError`. Usage in a stream only when
  `stream_options.include_usage` asked for it.
- "litellm" (the proxy, in front of an OpenAI-rules upstream): from LiteLLM's source (utils
  validate_chat_completion_tool_choice, validate_and_fix_openai_messages): a dict `tool_choice` needs
  `type` and `function`, user content parts need a known type, null fields are dropped before the
  upstream sees the request; errors are `litellm.BadRequestError: …` with `code` a string.
- "ollama" (its /v1 endpoint; vendor documentation, not validated): tool call `arguments` as a JSON
  object, whole calls in one stream chunk.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any, Literal, NotRequired

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment
from pydantic import TypeAdapter, ValidationError
from typing_extensions import TypedDict  # pydantic needs this one before Python 3.12

from tests.fakes.openai_server import NO_USAGE, FakeOpenAI, Step, cut_stream, error

TEMPLATES = Path(__file__).parent / "templates"
DIALECTS = ("openai", "llama-cpp-python", "llama-cpp-python-jinja", "vllm", "litellm", "ollama")
STREAMED_TOOLS_REFUSED = "Automatic streaming tool choice is not supported"


class Dialect:
    """The reference (OpenAI's) rules; subclasses add or replace their server's."""

    def __init__(self) -> None:
        self.prompts: list[str] = []  # what the server rendered for the model, request by request
        self.log: list[str] = []  # what the server printed to its own stderr (errors the client never sees)

    def validate(self, body: dict[str, Any]) -> Step | None:
        problem = openai_problem(body)
        return None if problem is None else error(400, body={"error": {
            "message": problem, "type": "invalid_request_error", "param": None, "code": None}})

    def shape(self, body: dict[str, Any], step: Step) -> Step:
        return step


def openai_problem(body: dict[str, Any]) -> str | None:
    if body.get("stream_options") is not None and not body.get("stream"):
        return "The 'stream_options' parameter is only allowed when 'stream' is enabled."
    choice = body.get("tool_choice")
    if choice is not None and not body.get("tools"):
        return "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified."
    if choice is not None and choice not in ("none", "auto", "required") and not (
            isinstance(choice, dict) and choice.get("type") == "function"):
        return f"Invalid value for 'tool_choice': {choice!r}."
    return _tool_order_problem(body.get("messages") or [])


def _tool_order_problem(messages: list[dict[str, Any]]) -> str | None:
    """OpenAI's rule on tool messages: each answers a call of the assistant message just before the run of
    tool messages it is in, and every call is answered before any other message."""
    open_ids: list[str] = []
    for i, m in enumerate(messages):
        role = m.get("role")
        if role == "tool":
            if m.get("tool_call_id") not in open_ids:
                return ("Invalid parameter: messages with role 'tool' must be a response to a preceeding message "
                        "with 'tool_calls'.")
            open_ids.remove(m["tool_call_id"])
            continue
        if open_ids:
            return ("An assistant message with 'tool_calls' must be followed by tool messages responding to each "
                    "'tool_call_id'. The following tool_call_ids did not have response messages: "
                    + ", ".join(open_ids))
        for j, call in enumerate((m.get("tool_calls") or []) if role == "assistant" else []):
            if not isinstance(call.get("function", {}).get("arguments"), str):
                return (f"Invalid type for 'messages[{i}].tool_calls[{j}].function.arguments': expected a string, "
                        "but got an object instead.")
            open_ids.append(call.get("id"))
    return None


# --- llama-cpp-python ----------------------------------------------------------------------------------
# Its request message types (llama_cpp/llama_types.py), as its FastAPI app validates them: the class names
# appear in its error text.

class _Function(TypedDict):
    name: str
    arguments: str


class _ToolCall(TypedDict):
    id: str
    type: Literal["function"]
    function: _Function


class ChatCompletionRequestSystemMessage(TypedDict):
    role: Literal["system"]
    content: str | None


class ChatCompletionRequestUserMessage(TypedDict):
    role: Literal["user"]
    content: str | list[dict[str, Any]] | None


class ChatCompletionRequestAssistantMessage(TypedDict):
    role: Literal["assistant"]
    content: NotRequired[str]
    tool_calls: NotRequired[list[_ToolCall]]


class ChatCompletionRequestToolMessage(TypedDict):
    role: Literal["tool"]
    content: str | None
    tool_call_id: str


_MESSAGES = TypeAdapter(list[ChatCompletionRequestSystemMessage | ChatCompletionRequestUserMessage
                             | ChatCompletionRequestAssistantMessage | ChatCompletionRequestToolMessage])


class LlamaCppPython(Dialect):
    def __init__(self, chat_format: str = "chatml-function-calling", calls_as_text: bool = False) -> None:
        super().__init__()
        self.chat_format = chat_format
        # Without a function-calling chat format the server never returns `tool_calls`: the model's calls
        # arrive as text (Qwen's <tool_call> blocks). True: scripted calls are sent so.
        self.calls_as_text = calls_as_text
        if chat_format == "chatml-function-calling":
            env = ImmutableSandboxedEnvironment(autoescape=jinja2.select_autoescape(["html", "xml"]),
                                               undefined=jinja2.StrictUndefined)
            self.template = env.from_string((TEMPLATES / "chatml-function-calling.jinja").read_text())
        else:  # Jinja2ChatFormatter: the GGUF's tokenizer.chat_template
            env = ImmutableSandboxedEnvironment(loader=jinja2.BaseLoader(), trim_blocks=True, lstrip_blocks=True,
                                                extensions=[jinja2.ext.loopcontrols])
            env.filters["tojson"] = lambda x, ensure_ascii=False, indent=None, separators=None, sort_keys=False: (
                json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys))
            self.template = env.from_string((TEMPLATES / "qwen2.5.jinja").read_text())

    def validate(self, body: dict[str, Any]) -> Step | None:
        try:
            _MESSAGES.validate_python(body.get("messages") or [])
        except ValidationError as exc:
            errors = exc.errors(include_url=False)
            for e in errors:
                e["loc"] = ("body", "messages", *e["loc"])
            return self._fails(f"{len(errors)} validation errors:\n" + "".join(f"  {e!r}\n" for e in errors)
                               + "\n  Endpoint: POST /v1/chat/completions")
        required = body.get("tools") and body.get("tool_choice") == "required"
        if self.chat_format == "chatml-function-calling" and required:
            # chatml_function_calling: `assert isinstance(tool_choice, str) and tool_choice == "auto"` after the
            # none and named cases; an AssertionError's text is empty
            return self._fails("")
        try:
            self.prompts.append(self._render(body))
        except Exception as exc:  # the template's own failure (TypeError, UndefinedError, ValueError)
            return self._fails(str(exc))
        return None

    def _render(self, body: dict[str, Any]) -> str:
        messages, tools, choice = body.get("messages") or [], body.get("tools"), body.get("tool_choice")
        if self.chat_format != "chatml-function-calling":
            def raise_exception(message: str) -> None:
                raise ValueError(message)
            return self.template.render(messages=messages, tools=tools, tool_choice=choice, bos_token="",
                                        eos_token="<|im_end|>", add_generation_prompt=True,
                                        raise_exception=raise_exception, functions=None, function_call=None)
        offered = bool(tools) and choice not in (None, "none")
        return self.template.render(messages=messages, tools=tools if offered else [],
                                    tool_calls=True if offered else None, add_generation_prompt=True)

    def _fails(self, message: str) -> Step:
        self.log.append(message)
        return error(500, body={"error": {"message": message, "type": "internal_server_error", "param": None,
                                          "code": None}})

    def shape(self, body: dict[str, Any], step: Step) -> Step:
        if step.kind != "reply":
            return step
        streamed = bool(body.get("stream"))
        if (streamed and step.calls and self.chat_format == "chatml-function-calling"
                and body.get("tool_choice") == "auto"):
            self.log.append(STREAMED_TOOLS_REFUSED)  # raised after the 200 headers: only the log says it
            return cut_stream()
        if self.calls_as_text and step.calls:
            text = "\n".join(f'<tool_call>\n{{"name": "{name}", "arguments": {json.dumps(args)}}}\n</tool_call>'
                             for name, args in step.calls)
            step = Step("reply", content=text, usage=step.usage, finish="stop")
        if streamed:
            step = _copy(step, usage=NO_USAGE)  # llama-cpp-python reports no usage in a stream
        return step


# --- vLLM ----------------------------------------------------------------------------------------------

class VLLM(Dialect):
    def __init__(self, auto_tools: bool = True) -> None:
        super().__init__()
        self.auto_tools = auto_tools  # started with --enable-auto-tool-choice --tool-call-parser …

    def validate(self, body: dict[str, Any]) -> Step | None:
        problem = self._problem(body)
        return None if problem is None else error(400, body={"error": {
            "message": problem, "type": "BadRequestError", "param": None, "code": 400}})

    def _problem(self, body: dict[str, Any]) -> str | None:
        if body.get("stream_options") and not body.get("stream"):
            return "Stream options can only be defined when `stream=True`."
        choice = body.get("tool_choice", "auto" if body.get("tools") else None)
        if choice not in (None, "none"):
            if body.get("tools") is None:
                return "When using `tool_choice`, `tools` must be set."
            if choice not in ("auto", "required") and not isinstance(choice, dict):
                return (f"Invalid value for `tool_choice`: {choice}! Only named tools, \"none\", \"auto\" or "
                        "\"required\" are supported.")
            if choice == "auto" and not self.auto_tools:
                return "\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set"
        for m in body.get("messages") or []:  # chat_utils: every call's arguments become a dict for the template
            for call in (m.get("tool_calls") or []) if m.get("role") == "assistant" else []:
                arguments = call.get("function", {}).get("arguments")
                if arguments and isinstance(arguments, str):
                    try:
                        json.loads(arguments)
                    except ValueError as exc:
                        return f"{exc} None"
        return None

    def shape(self, body: dict[str, Any], step: Step) -> Step:
        asked = (body.get("stream_options") or {}).get("include_usage")
        if step.kind == "reply" and body.get("stream") and not asked:
            return _copy(step, usage=NO_USAGE)
        return step


# --- LiteLLM proxy -------------------------------------------------------------------------------------

class LiteLLM(Dialect):
    PART_TYPES = ("text", "image_url", "input_audio", "audio_url", "document", "video_url", "file")

    def validate(self, body: dict[str, Any]) -> Step | None:
        problem = self._own_problem(body)
        if problem is None:  # what the upstream (OpenAI rules) sees: null fields dropped, roles filled in
            cleaned = [{k: v for k, v in {"role": "assistant", **m}.items() if v is not None}
                       for m in body.get("messages") or []]
            upstream = openai_problem({**body, "messages": cleaned})
            problem = None if upstream is None else f"OpenAIException - {upstream}"
        return None if problem is None else error(400, body={"error": {
            "message": f"litellm.BadRequestError: {problem}", "type": None, "param": None, "code": "400"}})

    def _own_problem(self, body: dict[str, Any]) -> str | None:
        choice = body.get("tool_choice")
        if isinstance(choice, dict) and not (choice.get("type") in ("auto", "none", "required")
                                             and "function" not in choice):
            if choice.get("type") is None or choice.get("function") is None:
                return f"Invalid tool choice, tool_choice={choice}"
        elif choice is not None and not isinstance(choice, str):
            return f"Invalid tool choice, tool_choice={choice}. Got={type(choice)}. Expecting str, or dict."
        for i, m in enumerate(body.get("messages") or []):
            parts = m.get("content") if m.get("role") == "user" and isinstance(m.get("content"), list) else []
            if any(isinstance(p, dict) and p.get("type") not in self.PART_TYPES for p in parts):
                return (f"Invalid user message at index {i}. Please ensure all user messages are valid OpenAI "
                            "chat completion messages.")
        return None


# --- Ollama --------------------------------------------------------------------------------------------

class Ollama(Dialect):
    def shape(self, body: dict[str, Any], step: Step) -> Step:
        return _copy(step, args_as_object=True) if step.kind == "reply" and step.calls else step


def use(server: FakeOpenAI, name: str, **options: Any) -> Dialect:
    """`server` behaves as the named server from now on; the dialect keeps what the server rendered and logged."""
    makers = {"openai": Dialect, "llama-cpp-python": LlamaCppPython,
              "llama-cpp-python-jinja": lambda **o: LlamaCppPython(chat_format="jinja", **o),
              "vllm": VLLM, "litellm": LiteLLM, "ollama": Ollama}
    dialect = makers[name](**options)
    server.validate, server.shape = dialect.validate, dialect.shape
    return dialect


def _copy(step: Step, **changes: Any) -> Step:
    return dataclasses.replace(step, **changes)
