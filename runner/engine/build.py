"""The pieces a run and a subagent are both built from: the model client a settings object names, and an
agent's context manager (its compaction call, spill files and history snapshots). Both the run's
assembly (runner/run/assemble.py) and a child agent's (runner/subagents/delegate.py) call these, so
neither reaches into the other.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from runner.context.manager import ContextConfig, ContextManager
from runner.core.events import ModelResponse
from runner.core.outcome import UsageError
from runner.engine.recorder import Recording
from runner.engine.settings import Settings, model_params
from runner.model.base import ChatModel
from runner.model.fallback import Chain, FallbackChat
from runner.model.replay import ReplayModel
from runner.tools.spill import keep


def make_model(settings: Settings, deadline: float, on_delta: Callable[[int, str | None], None] | None = None,
               chain: Chain | None = None, abort: threading.Event | None = None) -> ChatModel:
    """The client for `settings.model`; with fallback models, one that goes on with the next when it stays down.
    `chain`: the run's (its own agent and the children on its model share it); None: the settings' own."""
    if settings.model.startswith("replay:"):
        return ReplayModel(Path(settings.model[len("replay:") :]).expanduser())
    from runner.model.openai_chat import OpenAIChat  # the openai SDK costs ~0.5 s to import: only when used

    api_key = settings.api_key.get_secret_value() if settings.api_key else None
    if not api_key:
        if not settings.base_url:
            raise UsageError("no API key: set OPENAI_API_KEY (or point OPENAI_BASE_URL at a server that needs "
                             "none), or use --model replay:RUN_DIR")
        api_key = "not-needed"  # local servers (Ollama, llama.cpp) ignore it; the SDK insists on one

    def client(name: str) -> ChatModel:
        return OpenAIChat(name, api_key=api_key, base_url=settings.base_url, stream=settings.stream,
                          max_retries=settings.max_retries, retry_base_s=settings.retry_base_s,
                          retry_cap_s=settings.retry_cap_s, request_timeout_s=settings.request_timeout_s,
                          deadline=deadline, on_delta=on_delta, params=model_params(settings),
                          max_response_bytes=settings.max_response_bytes, max_retry_wait_s=settings.max_retry_wait_s,
                          tool_results=settings.tool_results, abort=abort)

    chain = chain or Chain.of(settings.model, settings.fallback_models)
    return FallbackChat(chain, client, on_delta) if len(chain.names) > 1 else client(chain.current)


def context_manager(rec: Recording, config: ContextConfig, model: ChatModel | None, tools: list[dict[str, Any]],
                    emit: Any, history: Path, turn: Callable[[], int], root: Path | None = None,
                    deadline: float | None = None) -> ContextManager:
    """An agent's context manager: its compaction call (on its model, with its tools, tool_choice none), its
    spill files in the run's outputs, its history snapshots in `history` (a subagent's: under the run's), its
    compaction call bounded by `deadline` (a subagent's own clock), else the run's."""

    def summarize(messages: list[dict[str, Any]]) -> str:
        assert model is not None, "an agent prepared without a model (a replay that only executes) never compacts"
        started = time.monotonic()
        until = deadline if deadline is not None else rec.ctx.deadline
        left = until - time.monotonic() if until is not None else None
        reply = model.complete(messages, tools, turn=turn(), emit=emit, timeout=left, tool_choice="none")
        emit(ModelResponse(turn=turn(), message=reply.message, usage=reply.usage,
                           finish_reason=reply.finish_reason, duration_s=round(time.monotonic() - started, 4)))
        text = (reply.message.get("content") or "").strip()
        if not text:
            raise ValueError("the compaction call returned no text")
        return text

    def spill(content: str) -> str | None:
        return (keep(rec.ctx.outputs_dir, content, rec.ctx.truncation.ttl_days, rec.ctx.masker)
                if rec.ctx.outputs_dir else None)

    return ContextManager(config, emit, history, summarize, spill=spill, masker=rec.ctx.masker, root=root)
