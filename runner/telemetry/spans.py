"""A run's events as OpenTelemetry spans (the GenAI conventions): `agent_run.run` at the root, an
`agent_run.turn` per request of each agent, `chat {model}` per model request, `execute_tool {tool}` per tool call,
and `invoke_agent {profile}` for a child agent, under the `execute_tool task` span that started it.

Spans are keyed by the ids the events carry — the agent's id, a call's id, a child's parent call — never by "the
current span": children and tool calls may run at once on other threads, and their events interleave with the
parent's. Each span starts and ends when the events that open and close it are consumed (their own time), and
every attribute is masked on its way in (no secret reaches a collector); no message content is ever an attribute.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer

from runner.core.events import (
    MAIN,
    Event,
    ModelFallback,
    ModelRequest,
    ModelResponse,
    ModelRetry,
    NetworkRequest,
    PermissionDecision,
    RunFinished,
    RunStarted,
    SubagentFinished,
    SubagentStarted,
    ToolCall,
    ToolResult,
    agent_id,
)
from runner.record.mask import Masker

PROVIDER = "openai"  # every model server agent-run speaks to speaks OpenAI's chat completions API
SERVICE_AGENT = "agent-run"  # the run's own agent, as gen_ai.agent.name


@dataclass
class _Tool:
    span: Span
    tool: str
    decision: str = "none"  # the policy's, once decided: allow | deny | ask (none: never reached the policy)


@dataclass
class _Agent:
    span: Span
    depth: int
    model: str
    turn: Span | None = None
    chat: Span | None = None
    chat_started: int = 0  # ns, for a request that never answered
    tools: dict[str, _Tool] = field(default_factory=dict)  # open tool calls by call id


class SpanBook:
    """Consumes events in the order the recorder hands them over (one at a time, from any thread) and keeps
    every open span under its ids. `on_tool_done(tool, decision)` and `on_denied(tool, domain)` and
    `on_response(event, model, seconds)` are the metrics' hooks."""

    def __init__(self, tracer: Tracer, masker: Masker, parent: Context | None, metrics: Any) -> None:
        self._tracer = tracer
        self._masker = masker
        self._parent = parent
        self._metrics = metrics
        self._agents: dict[str, _Agent] = {}
        self.root: Span | None = None
        self.ended_at: int | None = None  # run_finished's time: the root span's end
        self.model = ""

    # -- helpers -----------------------------------------------------------------------------------------

    def _attrs(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """Attributes as exported: None dropped, every string masked (lists of strings too)."""
        out: dict[str, Any] = {}
        for key, value in attrs.items():
            if value is None:
                continue
            if isinstance(value, str):
                value = self._masker.mask(value)[0]
            elif isinstance(value, list | tuple):
                value = [self._masker.mask(v)[0] if isinstance(v, str) else v for v in value]
            out[key] = value
        return out

    def _start(self, name: str, parent: Span | None, at: int, attrs: dict[str, Any],
               kind: SpanKind = SpanKind.INTERNAL) -> Span:
        context = trace.set_span_in_context(parent) if parent is not None else self._parent
        return self._tracer.start_span(self._masker.mask(name)[0], context=context, kind=kind,
                                       attributes=self._attrs(attrs), start_time=at)

    def _set(self, span: Span, attrs: dict[str, Any]) -> None:
        span.set_attributes(self._attrs(attrs))

    def _root(self, at: int) -> Span:
        if self.root is None:  # the first event, whichever it is (a warning may come before run_started)
            self.root = self._start("agent_run.run", None, at, {"gen_ai.operation.name": "invoke_agent",
                                                                "gen_ai.agent.name": SERVICE_AGENT})
            self._agents[MAIN] = _Agent(self.root, 0, "")
        return self.root

    def _agent(self, event: Event, at: int) -> _Agent:
        """The agent an event belongs to; a child seen first opens its `invoke_agent` span under its parent's
        `task` call (whatever arrives first of its events)."""
        self._root(at)
        aid = agent_id(event)
        found = self._agents.get(aid)
        if found is not None:
            return found
        info = event.agent or {}
        depth = int(info.get("depth") or 1)
        parent = self._task_span(str(info.get("parent_call_id") or ""), depth - 1)
        span = self._start(f"invoke_agent {info.get('name') or 'agent'}", parent, at, {
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": info.get("name"), "gen_ai.agent.id": aid,
            "agent_run.agent.depth": depth, "agent_run.parent_call_id": info.get("parent_call_id")})
        self._agents[aid] = agent = _Agent(span, depth, self.model)
        return agent

    def _task_span(self, call_id: str, depth: int) -> Span | None:
        """The open `task` call named `call_id` of an agent at `depth` (call ids are unique only within one
        conversation: of two such, the one opened last); the run's span when none is open."""
        for agent in reversed(list(self._agents.values())):
            call = agent.tools.get(call_id)
            if agent.depth == depth and call is not None:
                return call.span
        return self.root

    # -- the consumer --------------------------------------------------------------------------------------

    def __call__(self, event: Event) -> None:
        at = time.time_ns()
        if isinstance(event, RunFinished):
            self._finish(event, at)
            return
        agent = self._agent(event, at)
        if isinstance(event, RunStarted) and event.agent is None:
            self._started(event)
        elif isinstance(event, SubagentStarted):
            agent.model = event.model
            self._set(agent.span, {"gen_ai.request.model": event.model, "agent_run.mode": event.mode,
                                   "agent_run.agent.trusted": event.trusted})
        elif isinstance(event, SubagentFinished):
            self._set(agent.span, {"agent_run.status": event.status, "agent_run.turns": event.turns,
                                   "agent_run.tool_calls": event.tool_calls})
            self._end_agent(agent, at, event.status, event.reason)
        elif isinstance(event, ModelRequest):
            self._request(agent, event, at)
        elif isinstance(event, ModelResponse):
            self._response(agent, event, at)
        elif isinstance(event, ModelRetry) and agent.chat is not None:
            agent.chat.add_event("agent_run.model_retry", self._attrs(
                {"agent_run.attempt": event.attempt, "agent_run.delay_s": event.delay_s, "error.type": event.error}),
                timestamp=at)
        elif isinstance(event, ModelFallback):
            agent.model = event.to_model
        else:
            self._call_event(agent, event, at)

    def _call_event(self, agent: _Agent, event: Event, at: int) -> None:
        if isinstance(event, ToolCall):
            span = self._start(f"execute_tool {event.tool}", agent.turn or agent.span, at, {
                "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": event.tool,
                "gen_ai.tool.call.id": event.call_id, "gen_ai.tool.type": "function", "agent_run.turn": event.turn})
            agent.tools[event.call_id] = _Tool(span, event.tool)
        elif isinstance(event, PermissionDecision) and (call := agent.tools.get(event.call_id)) is not None:
            call.decision = event.policy_decision if event.decision == "deny" else event.decision
            attrs: dict[str, Any] = {"agent_run.policy.decision": call.decision,
                                     "agent_run.policy.domain": event.permissionDomain,
                                     "agent_run.policy.rule": event.rulePattern}
            if event.decision == "deny":
                deciding = next((t for t in event.targets if t.get("decision") == event.policy_decision),
                                event.targets[0] if event.targets else {})
                attrs["agent_run.denial.target"] = deciding.get("target")
                self._metrics.on_denied(event.tool, event.permissionDomain)
            self._set(call.span, attrs)
        elif isinstance(event, ToolResult) and (call := agent.tools.pop(event.call_id, None)) is not None:
            self._set(call.span, {"agent_run.tool.ok": event.ok, "error.type": event.error_type,
                                  "agent_run.tool.bytes": event.bytes})
            if not event.ok:
                call.span.set_status(Status(StatusCode.ERROR, event.error_type or "error"))
            call.span.end(end_time=at)
            self._metrics.on_tool_done(call.tool, call.decision)
        elif isinstance(event, NetworkRequest) and (call := agent.tools.get(event.call_id)) is not None:
            call.span.add_event("agent_run.network_request", self._attrs(
                {"server.address": event.host, "server.port": event.port, "agent_run.policy.decision": event.decision}),
                timestamp=at)

    def _started(self, event: RunStarted) -> None:
        self.model = event.model
        self._agents[MAIN].model = event.model
        sandbox = event.sandbox or {}
        self._set(self._root(0), {
            "gen_ai.request.model": event.model, "agent_run.policy": event.policy, "agent_run.mode": event.mode,
            "agent_run.version": event.version, "agent_run.max_turns": event.max_turns,
            "agent_run.sandbox.mode": sandbox.get("mode"), "agent_run.sandbox.active": sandbox.get("active"),
            "agent_run.sandbox.mechanism": sandbox.get("mechanism"),
            "agent_run.sandbox.network": sandbox.get("network"),
            "agent_run.resumed_from": (event.resumed_from or {}).get("run_id"), "agent_run.replay_of": event.replay_of})

    def _request(self, agent: _Agent, event: ModelRequest, at: int) -> None:
        self._end_chat(agent, at)
        if agent.turn is not None:
            agent.turn.end(end_time=at)
        agent.turn = self._start("agent_run.turn", agent.span, at, {"agent_run.turn": event.turn})
        agent.chat = self._start(f"chat {agent.model}", agent.turn, at, {
            "gen_ai.operation.name": "chat", "gen_ai.provider.name": PROVIDER, "gen_ai.request.model": agent.model,
            "agent_run.turn": event.turn, "agent_run.prompt_bytes": event.prompt_bytes}, SpanKind.CLIENT)
        agent.chat_started = at

    def _response(self, agent: _Agent, event: ModelResponse, at: int) -> None:
        if agent.chat is None:
            return
        usage = event.usage or {}
        self._set(agent.chat, {
            "gen_ai.response.model": agent.model, "gen_ai.usage.input_tokens": usage.get("prompt_tokens"),
            "gen_ai.usage.output_tokens": usage.get("completion_tokens"),
            "gen_ai.response.finish_reasons": [event.finish_reason] if event.finish_reason else None})
        agent.chat.end(end_time=at)
        agent.chat = None
        self._metrics.on_response(event, agent.model)

    def _end_chat(self, agent: _Agent, at: int) -> None:
        """A request that got no answer (the model failed, or the run ended while it waited)."""
        if agent.chat is not None:
            agent.chat.set_status(Status(StatusCode.ERROR, "no response"))
            agent.chat.set_attribute("error.type", "no_response")
            agent.chat.end(end_time=at)
            self._metrics.on_failed_request(agent.model, (at - agent.chat_started) / 1e9)
            agent.chat = None

    def _end_agent(self, agent: _Agent, at: int, status: str, reason: str | None) -> None:
        """Everything an agent has open, ended at `at`: its calls (the run ended during them), request, turn, and
        (a child's) own span."""
        for call in agent.tools.values():
            call.span.set_status(Status(StatusCode.ERROR, "unfinished"))
            call.span.end(end_time=at)
            self._metrics.on_tool_done(call.tool, call.decision)
        agent.tools.clear()
        self._end_chat(agent, at)
        if agent.turn is not None:
            agent.turn.end(end_time=at)
            agent.turn = None
        if agent.span is not self.root and agent.span.is_recording():
            if status != "success":
                agent.span.set_status(Status(StatusCode.ERROR, self._masker.mask(reason or status)[0]))
            agent.span.end(end_time=at)

    def _finish(self, event: RunFinished, at: int) -> None:
        root = self._root(at)
        for aid, agent in reversed(list(self._agents.items())):  # children first: they end inside their parents
            if aid != MAIN:
                self._end_agent(agent, at, "stopped", "the run ended")
        self._end_agent(self._agents[MAIN], at, event.status, event.reason)
        self._set(root, {"agent_run.status": event.status, "agent_run.exit_code": event.exit_code,
                         "agent_run.reason": event.reason, "agent_run.turns": event.turns,
                         "agent_run.tool_calls": event.tool_calls})
        if event.exit_code != 0:
            root.set_status(Status(StatusCode.ERROR, self._masker.mask(event.reason or event.status)[0]))
        self.ended_at = at
        self._metrics.on_run(event.status, event.exit_code)

    def close(self, attrs: dict[str, Any]) -> None:
        """The root span, ended at run_finished's time with what only the summary knows (cost)."""
        if self.root is None:
            return
        self._set(self.root, attrs)
        self.root.end(end_time=self.ended_at or time.time_ns())

