"""One tool call through the hooks, in order: parse → policy decision → execute → result event.

Returns the `tool` message content for the model. Nothing here raises for a bad
call: a malformed call, an unknown tool, a denial or a failing tool all become a
structured error the model can act on.
"""

from __future__ import annotations

import json
import re
import shlex
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import jsonschema

from runner.events import Emit, PermissionDecision, ToolCall, ToolResult
from runner.jsonutil import canonical, sha256_text
from runner.policy.decide import CallDecision, decide
from runner.policy.model import Policy
from runner.rundir import utc_now
from runner.tools.base import Tool, ToolContext, ToolError, ToolOutput
from runner.tools.registry import Registry


@dataclass
class CallEnv:
    """What every call needs and does not change during a run."""

    registry: Registry
    policy: Policy
    ctx: ToolContext
    run_id: str
    replay_base: list[str] = field(default_factory=list)  # argv prefix for replay commands


def handle_call(call: dict[str, Any], env: CallEnv, turn: int, emit: Emit) -> str:
    call_id = call.get("id") or ""
    name = call.get("function", {}).get("name", "")
    raw_args = call.get("function", {}).get("arguments", "")
    emit(ToolCall(turn=turn, call_id=call_id, tool=name, arguments=raw_args))
    started = time.monotonic()
    try:
        tool, args = _parse(name, raw_args, env.registry)
        decision = decide(env.policy, tool.domain, tool.targets(args, env.ctx))
        replay = None if decision.allowed else replay_command(env, decision)
        _emit_decision(emit, env, call_id, name, decision, replay)
        if not decision.allowed:
            raise _denial(decision, replay)
        output = tool.run(args, env.ctx)
    except ToolError as err:
        return _finish(emit, call_id, name, started, err.payload(), err.type, {})
    return _finish(emit, call_id, name, started, output, None, output.details)


def _parse(name: str, raw_args: str, registry: Registry) -> tuple[Tool, dict[str, Any]]:
    tool = registry.get(name)
    if tool is None:
        raise ToolError("UnknownTool", f"no tool named {name!r}; available: {', '.join(registry.names)}")
    try:
        args = json.loads(raw_args) if raw_args.strip() else {}
    except json.JSONDecodeError as exc:
        raise ToolError("InvalidArguments", f"arguments are not valid JSON ({exc.msg} at char {exc.pos})") from None
    if not isinstance(args, dict):
        raise ToolError("InvalidArguments", "arguments must be a JSON object")
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(tool.schema).iter_errors(args))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "arguments"
        raise ToolError("InvalidArguments", f"{where}: {error.message}", schema=tool.schema)
    return tool, args


def _emit_decision(emit: Emit, env: CallEnv, call_id: str, tool: str, d: CallDecision, replay: str | None) -> None:
    rule = d.deciding.rule
    emit(PermissionDecision(
        eventId=uuid.uuid4().hex, sessionId=env.run_id, mode=env.policy.mode, decision=d.effective,
        permissionDomain=d.domain,
        targets=[{"target": t.target, "decision": t.decision,
                  "rule": t.rule.describe() if t.rule else None} for t in d.targets],
        rulePattern=rule.pattern.raw if rule else None, timestamp=utc_now(), call_id=call_id, tool=tool,
        policy_decision=d.decision, rule=rule.describe() if rule else None, replay=replay,
    ))


def replay_command(env: CallEnv, d: CallDecision) -> str:
    """One line a human can run to grant exactly this call and rerun the task."""
    approvals = []
    for t in d.targets:
        if t.decision != "allow":
            approvals += ["--approve", f"{d.domain}:{exact_pattern(t.target)}"]
    return shlex.join([*env.replay_base, *approvals])


def exact_pattern(target: str) -> str:
    """A pattern matching this target only: the target itself unless it has glob characters."""
    if any(c in target for c in "*?[]"):
        return "regex:" + re.escape(target)
    return target


def _denial(d: CallDecision, replay: str | None) -> ToolError:
    rule = d.deciding.rule
    common = {"domain": d.domain, "target": d.deciding.target,
              "rule": rule.describe() if rule else None}
    if d.decision == "deny":
        return ToolError("ToolNotAllowed", f"policy denies {d.domain} on {d.deciding.target}", **common)
    return ToolError("ApprovalRequired",
                     f"{d.domain} on {d.deciding.target} needs approval, and nobody can approve in a headless run; "
                     "do not retry it", replay=replay, **common)


def _finish(emit: Emit, call_id: str, tool: str, started: float, result: ToolOutput | dict[str, Any],
            error_type: str | None, details: dict[str, Any]) -> str:
    content = result.content if isinstance(result, ToolOutput) else canonical(result)
    emit(ToolResult(call_id=call_id, tool=tool, ok=error_type is None, error_type=error_type,
                    bytes=len(content.encode("utf-8")), sha256=sha256_text(content),
                    duration_s=round(time.monotonic() - started, 4), details=details))
    return content
