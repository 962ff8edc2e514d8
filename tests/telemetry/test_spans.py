"""Events to spans, keyed by the ids the events carry: two children running at once (issue 28) interleave their
events with each other's and the parent's, reuse the parent's call ids, and still land under their own `task`
calls; whatever is open when the run ends is ended with it."""

from __future__ import annotations

from typing import Any

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from runner.core.events import (
    ModelRequest,
    ModelResponse,
    PermissionDecision,
    RunFinished,
    SubagentFinished,
    SubagentStarted,
    ToolCall,
    ToolResult,
    tag,
)
from runner.record.mask import Masker
from runner.telemetry.spans import SpanBook

SECRET = "ghp_" + "S" * 36


class Counts:
    def __init__(self) -> None:
        self.seen: list[tuple[str, Any]] = []

    def __getattr__(self, name: str) -> Any:
        return lambda *args: self.seen.append((name, args))


def _request(turn: int) -> ModelRequest:
    return ModelRequest(turn=turn, message_count=2, estimated_tokens=10, prompt_bytes=100, prompt_sha256="x",
                        stage="none", prefix_hash="y", extends_previous=False)


def _response(turn: int) -> ModelResponse:
    return ModelResponse(turn=turn, message={"role": "assistant", "content": SECRET}, finish_reason="tool_calls",
                         usage={"prompt_tokens": 10, "completion_tokens": 2}, duration_s=0.1)


def _call(call_id: str, tool: str) -> ToolCall:
    return ToolCall(turn=1, call_id=call_id, tool=tool, arguments="{}")


def _result(call_id: str, tool: str, ok: bool = True) -> ToolResult:
    return ToolResult(call_id=call_id, tool=tool, ok=ok, error_type=None if ok else "ApprovalRequired", bytes=1,
                      sha256="z", duration_s=0.0)


def _child(aid: str, call_id: str) -> dict[str, Any]:
    return {"id": aid, "name": f"prof-{aid}", "parent_call_id": call_id, "depth": 1}


def _started(call_id: str) -> SubagentStarted:
    return SubagentStarted(call_id=call_id, name="p", description="d", profile="builtin", trusted=True,
                           model="child-model", mode="agent", tools=[], tools_sha256="t", max_turns=3, timeout_s=None)


def test_children_running_at_once_land_under_their_own_task_calls():
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    counts = Counts()
    book = SpanBook(provider.get_tracer("t"), Masker({}), None, counts)
    a1, a2 = _child("a1", "call_1_0"), _child("a2", "call_1_1")
    denied = PermissionDecision(eventId="e", sessionId="s", mode="agent", decision="deny", permissionDomain="bash",
                                targets=[{"decision": "ask", "target": f"shell:echo {SECRET}"}], rulePattern="**",
                                timestamp="t", call_id="call_1_0", tool="bash", policy_decision="ask", rule=None)
    events = [_request(1), _response(1), _call("call_1_0", "task"), _call("call_1_1", "task"),
              tag(_started("call_1_1"), a2), tag(_started("call_1_0"), a1),
              tag(_request(1), a1), tag(_request(1), a2), tag(_response(1), a2),
              tag(_call("call_1_0", "bash"), a2), tag(_response(1), a1), tag(_call("call_1_0", "read"), a1),
              tag(denied, a2), tag(_result("call_1_0", "read"), a1), tag(_result("call_1_0", "bash", ok=False), a2),
              tag(SubagentFinished(call_id="call_1_0", status="success", reason=None, turns=1, tool_calls=1,
                                   usage={}, duration_s=0.1), a1),
              _result("call_1_0", "task"),
              # a2 never finishes: the run ends while it works
              RunFinished(status="denied", exit_code=3, reason="1 denied", turns=1, tool_calls=4)]
    for event in events:
        book(event)
    book.close({"agent_run.cost_usd": 0.5})
    spans = {s.name: s for s in exporter.get_finished_spans()}
    assert all(s.end_time is not None for s in exporter.get_finished_spans())
    assert len(exporter.get_finished_spans()) == 13  # the run, 3 turns, 3 chats, 2 tasks, 2 agents, read, bash
    by_id = {s.context.span_id: s for s in exporter.get_finished_spans()}

    def chain(span: Any) -> list[str]:
        out = []
        while span.parent is not None and span.parent.span_id in by_id:
            span = by_id[span.parent.span_id]
            out.append(span.name if not span.name.startswith("execute_tool task") else
                       f"task {span.attributes['gen_ai.tool.call.id']}")
        return out

    assert chain(spans["execute_tool read"]) == ["agent_run.turn", "invoke_agent prof-a1", "task call_1_0",
                                                 "agent_run.turn", "agent_run.run"]
    assert chain(spans["execute_tool bash"]) == ["agent_run.turn", "invoke_agent prof-a2", "task call_1_1",
                                                 "agent_run.turn", "agent_run.run"]
    assert spans["chat child-model"].attributes["gen_ai.request.model"] == "child-model"
    assert spans["invoke_agent prof-a2"].status.status_code.name == "ERROR"  # ended by the run's end
    assert spans["execute_tool bash"].attributes["agent_run.denial.target"].startswith("shell:echo [REDACTED:")
    assert spans["agent_run.run"].attributes["agent_run.exit_code"] == 3
    assert spans["agent_run.run"].attributes["agent_run.cost_usd"] == 0.5
    assert all(SECRET not in str(dict(s.attributes)) for s in exporter.get_finished_spans())
    assert ("on_denied", ("bash", "bash")) in counts.seen and ("on_run", ("denied", 3)) in counts.seen
