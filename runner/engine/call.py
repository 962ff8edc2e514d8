"""One tool call through the call pipeline, in order: parse → policy decision (and the PreToolUse hooks) →
execute → the PostToolUse hooks → guards → result event.

Returns the `tool` message content for the model. Nothing here raises for a bad
call: a malformed call, an unknown tool, a denial or a failing tool all become a
structured error the model can act on. Only a guard may end the run.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Protocol

import jsonschema

from runner.core.events import (
    Emit,
    GuardWarning,
    NetworkRequest,
    PermissionDecision,
    RunWarning,
    ToolCall,
    ToolResult,
    call_ref,
)
from runner.core.jsonutil import canonical, sha256_text
from runner.core.outcome import Failed
from runner.core.shown import shown, shown_obj
from runner.engine.hooks import AfterCall
from runner.engine.workflow_hooks import Judged, WorkflowHooks, claude_input, pre_tool_use
from runner.guards.base import CallRecord, Guard
from runner.policy.decide import CallDecision, approval_scope, decide
from runner.policy.egress import Verdict, net_verdict
from runner.policy.load import policy_ref
from runner.policy.match import exact_pattern
from runner.policy.model import Policy, Rule, Target
from runner.policy.sandbox_config import net_target
from runner.policy.targets import target_path
from runner.record.commands import command
from runner.record.rundir import run_ref, utc_now
from runner.tools.base import Cancel, Tool, ToolContext, ToolError, ToolOutput
from runner.tools.registry import Registry
from runner.tools.spill import spill_text
from runner.tools.truncate import count_lines
from runner.workspace.skills import Restricting


class EditHook(Protocol):
    """Sees the files an edit-domain call may change, before it changes them (the change tracker)."""

    def __call__(self, paths: list[Path], /) -> None: ...


@dataclass
class CallEnv:
    """What every call needs and does not change during a run."""

    registry: Registry
    policy: Policy
    ctx: ToolContext
    run_id: str
    run_dir: Path | None = None
    rerun_base: list[str] = field(default_factory=list)  # the rerun's words after `agent-run`, the task last
    guards: list[Guard] = field(default_factory=list)
    before_edit: EditHook | None = None  # sees files before an edit-domain call changes them
    admit: AfterCall | None = None  # context stage 1 (runner/context/manager.py admit_bound)
    home: Path | None = None  # where printed commands are run from (the workspace; a worktree run's origin)
    restrict: Restricting | None = None  # a loaded skill's allowed-tools; a child's: AllOf profile's, parent's
    agent: dict[str, Any] | None = None  # a subagent's {id, name, parent_call_id, depth}; None: the run's own
    hooks: WorkflowHooks | None = None  # the policy's lifecycle hooks (runner/engine/workflow_hooks.py)


@dataclass
class Begun:
    """A call decided and not yet run: what `execute` runs (`tool` and `args`), or its result already (a
    malformed call, a refusal, a denial: `result`)."""

    call: dict[str, Any]
    index: int
    started: float
    tool: Tool | None = None
    args: dict[str, Any] = field(default_factory=dict)
    edits: list[Path] = field(default_factory=list)  # files an edit-domain call may change (before_edit)
    denied: bool = False
    result: ToolOutput | ToolError | None = None
    hooks: list[dict[str, Any]] = field(default_factory=list)  # the hooks that judged it, for its audit line

    @property
    def call_id(self) -> str:
        return self.call.get("id") or ""

    @property
    def name(self) -> str:
        return self.call.get("function", {}).get("name", "")

    @property
    def raw_args(self) -> str:
        return self.call.get("function", {}).get("arguments", "")


def handle_call(call: dict[str, Any], env: CallEnv, turn: int, emit: Emit, *, source: str | None = None,
                index: int = 0) -> str:
    """`source` "text": the call was parsed from the reply's text (runner/engine/loop.py with_text_call).
    `index`: its position among the reply's calls."""
    begun = begin(call, env, turn, emit, source=source, index=index)
    return finish(begun, execute(begun, env), env, emit)


def begin(call: dict[str, Any], env: CallEnv, turn: int, emit: Emit, *, source: str | None = None,
          index: int = 0) -> Begun:
    """The call recorded, parsed and decided by the policy (its decision recorded): on the loop's thread, in the
    model's order, so decisions and their audit records are those of a sequential run."""
    begun = Begun(call, index, time.monotonic())
    emit(ToolCall(turn=turn, call_id=begun.call_id, tool=begun.name, arguments=begun.raw_args, source=source,
                  call_index=index))
    try:
        tool, args = parse_call(begun.name, begun.raw_args, env.registry)
        targets = tool.targets(args, env.ctx)
        restrict = env.restrict
        why = restrict.refuses(begun.name, targets) if restrict is not None else None
        if why is not None and restrict is not None:  # a loaded skill's allowed-tools: narrows, never replaces, policy
            raise ToolError("ToolNotAllowed", why, **restrict.fields())
        decision, denial = decide_and_record(env, begun.call_id, begun.name, tool.domain, targets, emit,
                                             tool.risk_of(args, env.ctx))
        if denial is not None:
            begun.denied = True
            raise _denial_error(decision, denial)
        if env.hooks is not None and env.hooks.any("PreToolUse"):
            judged = pre_tool_use(env.hooks, tool, args, begun.call_id, env.agent, decision, emit, env.ctx)
            begun.hooks = judged.hooks
            if judged.refusal is not None:
                begun.denied = True
                raise _hook_refusal(env, begun.call_id, begun.name, decision, judged, emit)
        tool.reserve(args, env.ctx, begun.call_id)
    except ToolError as err:
        begun.result = err
        return begun
    begun.tool, begun.args = tool, args
    begun.edits = [p for t in decision.targets if t.target.domain == "edit"
                   if (p := target_path(env.ctx.workspace, t.target.target)) is not None]
    return begun


def execute(begun: Begun, env: CallEnv, cancel: Cancel | None = None) -> ToolOutput | ToolError:
    """The decided call run: on the loop's thread, or on a worker beside other calls of the same reply
    (runner/engine/batch.py). Its context is its own copy: what `authorize` records is under this call."""
    if begun.result is not None or begun.tool is None:
        return begun.result if begun.result is not None else ToolError("UnknownTool", "nothing to run")
    ctx = env.ctx.for_call(begun.call_id, begun.name, call_cancel(begun, env, cancel))
    if begun.tool.sized:
        ctx.truncation = ctx.truncation.for_call(begun.args)
    try:
        if env.before_edit is not None:
            env.before_edit(begun.edits)
        output = begun.tool.run(begun.args, ctx)
        # A file name that is not UTF-8 shows as \xNN: the spill file, the log and the request all need UTF-8.
        output = ToolOutput(shown(output.content), shown_obj(output.details))
        return truncated(begun.tool, output, ctx)
    except ToolError as err:
        return err


def call_cancel(begun: Begun, env: CallEnv, cancel: Cancel | None) -> Cancel | None:
    """The call's stop: a read-only tool's own time limit (the policy's `tools.NAME.timeoutSeconds`) is a child of
    its group's or the run's, whose `why` names that limit; the others run on the one they are given."""
    limit = env.policy.sections.get("tools", {}).get(begun.name, {}).get("timeoutSeconds")
    if limit is None or begun.tool is None or begun.tool.concurrent != "read":
        return cancel
    why = f"the call's time limit (tools.{begun.name}.timeoutSeconds: {limit:g} s) is up"
    return (cancel or env.ctx.cancel).child(time.monotonic() + float(limit), why)


def finish(begun: Begun, result: ToolOutput | ToolError, env: CallEnv, emit: Emit) -> str:
    """The result admitted (context stage 1), seen by the guards and recorded, in the model's order; returns the
    `tool` message content. Raises a guard's stop."""
    content = result.content if isinstance(result, ToolOutput) else shown(canonical(result.payload()))
    if env.admit is not None:
        try:
            content = env.admit(content, begun.name)
        except ToolError as err:  # refused whole, never cut (runner/context/window.py)
            result, content = err, shown(canonical(err.payload()))
    if env.hooks is not None and env.hooks.any("PostToolUse"):
        content = post_tool_use(env.hooks, begun, result, content, env, emit)
    error_type = None if isinstance(result, ToolOutput) else result.type
    call_id, name = begun.call_id, begun.name
    record = CallRecord(call_id, name, begun.raw_args, fingerprint(name, begun.raw_args), begun.denied, error_type,
                        sha256_text(content))
    verdicts = [v for v in (guard(record) for guard in env.guards) if v is not None]
    warnings = [w for v in verdicts for w in v.warnings]
    if warnings:
        # Appended to this result only: earlier messages are never edited (the prefix stays stable).
        content += "".join(f"\n\n[agent-run warning: {message}. Change your approach.]" for _, message in warnings)
    content += "".join(f"\n\n{note}" for v in verdicts for note in v.notes)
    emit(ToolResult(call_id=call_id, tool=name, ok=error_type is None, error_type=error_type,
                    bytes=len(content.encode("utf-8")), sha256=sha256_text(content),
                    duration_s=round(time.monotonic() - begun.started, 4),
                    details=_details(result, content), content=content, call_index=begun.index,
                    error_class=None if isinstance(result, ToolOutput) else result.error_class))
    for detector, message in warnings:
        emit(GuardWarning(call_id=call_id, detector=detector, message=message))
    for code, message in result.warnings if isinstance(result, ToolError) else ():
        emit(RunWarning(code=code, message=message))  # the tool's own (a write the sandbox refused)
    stop = next((v.stop for v in verdicts if v.stop is not None), None)
    if stop is not None:
        raise stop
    return content


def decide_and_record(env: CallEnv, call_id: str, tool: str, domain: str, targets: list[Target],
                      emit: Emit, base_risk: str | None = None) -> tuple[CallDecision, dict[str, Any] | None]:
    """The policy decision, recorded as an audit event; with the approval request when denied. `base_risk`:
    the tool's own level (None: the domain's, for what a running tool meets)."""
    decision = decide(env.policy, domain, targets, base_risk=base_risk)
    denial = None if decision.allowed else approval_request(env, call_id, decision)
    _emit_decision(emit, env, call_id, tool, decision, denial)
    return decision, denial


def authorize_within(env: CallEnv, emit: Emit, targets: list[Target], call_id: str, tool: str) -> None:
    """For targets a running tool meets (a redirect's URL): decided and recorded like the call's own,
    so a denial there is in the summary and the exit code too."""
    decision, denial = decide_and_record(env, call_id, tool, targets[0].domain, targets, emit)
    if denial is not None:
        raise _denial_error(decision, denial)


def bind_hooks(env: CallEnv, emit: Emit) -> None:
    """An agent's context decides what its tools meet while they run under its own policy and records it in its
    own log stream: redirects (`authorize`) and its commands' connections (`net`, for the egress proxy)."""
    env.ctx.authorize = lambda targets, call_id, tool: authorize_within(env, emit, targets, call_id, tool)
    env.ctx.net = lambda call_id, tool: net_decider(env, emit, call_id or "sandbox", tool or "bash")


def net_decider(env: CallEnv, emit: Emit, call_id: str, tool: str) -> Callable[[str, int], Verdict]:
    """The egress proxy's decision for a connection a command of `call_id` made: the same hook as a tool call (a
    `permission_decision` under that call, a `network_request` event, a denial in the summary when refused)."""

    def decide_net(host: str, port: int) -> Verdict:
        target = Target("network", net_target(host, port))
        decision, _denial = decide_and_record(env, call_id, tool, "network", [target], emit)
        rule = decision.deciding.rule
        emit(NetworkRequest(call_id=call_id, host=host, port=port, decision=decision.effective,
                            rule=rule.describe() if rule else None))
        return net_verdict(decision)

    return decide_net


def truncated(tool: Tool, output: ToolOutput, ctx: ToolContext) -> ToolOutput:
    """Every result passes through truncation. Only a tool that streamed its own spill file (bash) has
    already done it: its details are the spill's (`truncated` and the full output's `sha256`); a
    `truncated` alone says nothing about the content's size."""
    if "truncated" in output.details and "sha256" in output.details:
        return output
    content, details = spill_text(ctx.outputs_dir, output.content, ctx.truncation, from_end=tool.keep == "tail",
                                  masker=ctx.masker)
    return ToolOutput(content, {**output.details, **details})


def _details(result: ToolOutput | ToolError, content: str) -> dict[str, Any]:
    """For the log: a tool's details, or an error's fields (its output is in `content` already)."""
    if isinstance(result, ToolOutput):
        return result.details
    return {"lines": count_lines(content), **{k: v for k, v in result.extra.items() if k not in ("output", "schema")},
            **result.logged}


def fingerprint(tool: str, raw_args: str) -> str:
    try:
        normalized = canonical(json.loads(raw_args)) if raw_args.strip() else "{}"
    except (json.JSONDecodeError, RecursionError):
        normalized = raw_args
    return f"{tool}:{sha256_text(normalized)}"


def parse_call(name: str, raw_args: str, registry: Registry) -> tuple[Tool, dict[str, Any]]:
    tool = registry.get(name)
    if tool is None:
        raise ToolError("UnknownTool", f"no tool named {name!r}; available: {', '.join(registry.names)}")
    try:
        args = json.loads(raw_args) if raw_args.strip() else {}
    except json.JSONDecodeError as exc:
        raise ToolError("InvalidArguments", f"arguments are not valid JSON ({exc.msg} at char {exc.pos})") from None
    except RecursionError:  # what the model sent, not a bug of ours: an error it can act on
        raise ToolError("InvalidArguments", "arguments are nested too deeply") from None
    if not isinstance(args, dict):
        raise ToolError("InvalidArguments", "arguments must be a JSON object")
    error = jsonschema.exceptions.best_match(_validator(tool.name, canonical(tool.schema)).iter_errors(args))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "arguments"
        # jsonschema's wording for bounds ("0 is less than or equal to the minimum of 0") reads backwards.
        bound = {"exclusiveMinimum": "greater than", "minimum": "at least", "exclusiveMaximum": "less than",
                 "maximum": "at most"}.get(str(error.validator))
        message = (f"{where} must be {bound} {error.validator_value} (got {canonical(error.instance)})" if bound
                   else f"{where}: {error.message}")
        raise ToolError("InvalidArguments", message, schema=tool.schema)
    return tool, args


@cache
def _validator(_name: str, schema: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(json.loads(schema))


def approval_request(env: CallEnv, call_id: str, d: CallDecision) -> dict[str, Any]:
    """The replayable request: what to approve, and one line that does it.

    `replay` (for the summary) names this run's directory; `rerun` (which the model also
    sees) does not, so the prompt stays the same across reruns of the same task."""
    approve = [f"{t.target.domain}:{exact_pattern(t.target.target)}" for t in d.targets if t.decision != "allow"]
    where = run_ref(env.run_dir, env.home or env.ctx.workspace) if env.run_dir else None
    replay = command("replay", where, "--call", call_ref(env.agent, call_id), "--approve") if where else None
    rerun = command(*env.rerun_base[:-1], *(x for a in approve for x in ("--approve", a)),
                    *env.rerun_base[-1:]) if env.rerun_base else None
    return {"approve": approve, "replay": replay, "rerun": rerun}


def _emit_decision(emit: Emit, env: CallEnv, call_id: str, tool: str, d: CallDecision,
                   denial: dict[str, Any] | None) -> None:
    rule = d.deciding.rule
    emit(PermissionDecision(
        eventId=uuid.uuid4().hex, sessionId=env.run_id, mode=d.mode, decision=d.effective,
        permissionDomain=d.domain, targets=[_placed(t.describe(), env) for t in d.targets],
        rulePattern=rule.pattern.raw if rule else None, timestamp=utc_now(), call_id=call_id, tool=tool,
        policy_decision=d.decision, rule=_described(rule, env) if rule else None,
        replay=denial["replay"] if denial else None, approve=denial["approve"] if denial else None,
        rerun=denial["rerun"] if denial else None, risk=d.risk, approval_scope=approval_scope(d),
    ))


def _described(rule: Rule, env: CallEnv) -> dict[str, Any]:
    """A rule as recorded: its policy file named as printed commands name it (a shipped policy by name, a
    workspace file relative to the root), so the record names no path of this machine."""
    described = rule.describe()
    if rule.source in env.policy.files:
        described["file"] = policy_ref(rule.source, env.home or env.ctx.workspace)
    return described


def _placed(target: dict[str, Any], env: CallEnv) -> dict[str, Any]:
    """A decided target as recorded: the rule that decided it placed like `_described`."""
    rule = target.get("rule")
    if isinstance(rule, dict) and rule.get("file") in env.policy.files:
        target["rule"] = {**rule, "file": policy_ref(str(rule["file"]), env.home or env.ctx.workspace)}
    return target


def _denial_error(d: CallDecision, denial: dict[str, Any]) -> ToolError:
    deciding = d.deciding
    common = {"domain": deciding.target.domain, "target": deciding.target.target,
              "rule": deciding.rule.describe() if deciding.rule else None}
    if deciding.target.note:
        common["note"] = deciding.target.note
    if d.decision == "deny":
        return ToolError("ToolNotAllowed", f"policy denies {deciding.target.domain} on {deciding.target.target}; "
                         "do not retry it", **common)
    return ToolError("ApprovalRequired",
                     f"{deciding.target.domain} on {deciding.target.target} needs approval, and nobody can approve "
                     "in a headless run; do not retry it", replay=denial["rerun"], **common)


def post_tool_use(hooks: WorkflowHooks, begun: Begun, result: ToolOutput | ToolError, content: str, env: CallEnv,
                  emit: Emit) -> str:
    """The call's PostToolUse hooks (its effects stay): their context, or a block's reason, appended to this call's
    tool message — never a user message between one reply's tool messages, which strict servers refuse —, cut to
    the truncation limits. They may write only the paths this call was allowed to edit."""
    tool = begun.tool
    if tool is None:  # a call that never ran (malformed, refused, denied) has no PostToolUse
        return content
    response = {"ok": isinstance(result, ToolOutput), "content": content,
                "error_type": None if isinstance(result, ToolOutput) else result.type}
    judged = hooks.judge("PostToolUse", (tool.name, *tool.aliases),
                         {**claude_input(tool, begun.args, env.ctx.workspace), "tool_response": response,
                          "call_id": begun.call_id, "agent": env.agent}, emit, env.ctx.cancel, begun.call_id,
                         writable=begun.edits)
    begun.hooks = [*begun.hooks, *judged.hooks]
    if judged.stop is not None:
        raise Failed(f"a PostToolUse hook stopped the run: {judged.stop}")
    added = [f"[agent-run: a PostToolUse hook blocked: {judged.reason}]" if judged.refusal else None,
             f"[PostToolUse hook context]\n{judged.context}" if judged.context else None]
    text = "\n\n".join(a for a in added if a)
    if not text:
        return content
    limit = env.ctx.truncation.max_bytes
    raw = text.encode("utf-8")
    if len(raw) > limit:
        text = raw[:limit].decode("utf-8", "ignore") + "\n[… the hook's output was cut at the truncation limit]"
    return f"{content}\n\n{text}"


def _hook_refusal(env: CallEnv, call_id: str, tool: str, d: CallDecision, judged: Judged, emit: Emit) -> ToolError:
    """A PreToolUse hook narrowed the policy's allow: recorded as the call's denial (a second permission_decision:
    deny, its policy_decision the hook's deny or ask, the replay that runs the hook again), told to the model."""
    ask = judged.refusal == "ask"
    where = run_ref(env.run_dir, env.home or env.ctx.workspace) if env.run_dir else None
    replay = command("replay", where, "--call", call_ref(env.agent, call_id), "--approve") if where else None
    first = judged.hooks[0] if judged.hooks else {}
    refusing = next((h for h in judged.hooks if h["decision"] in ("deny", "ask", "block")), first)
    pattern = str(refusing.get("command", ""))
    rule = {"file": "<PreToolUse hook>", "index": 0, "line": 0, "domain": d.domain, "pattern": pattern,
            "decision": "ask" if ask else "deny"}
    approve = [f"{t.target.domain}:{exact_pattern(t.target.target)}" for t in d.targets]
    emit(PermissionDecision(
        eventId=uuid.uuid4().hex, sessionId=env.run_id, mode=d.mode, decision="deny", permissionDomain=d.domain,
        targets=[_placed(t.describe(), env) for t in d.targets], rulePattern=pattern, timestamp=utc_now(),
        call_id=call_id, tool=tool, policy_decision="ask" if ask else "deny", rule=rule, replay=replay,
        approve=approve, rerun=None, risk=d.risk, approval_scope="policy"))
    reason = judged.reason or "refused by a hook"
    if ask:
        return ToolError("ApprovalRequired", f"a PreToolUse hook asks for approval of this call ({reason}), and "
                         "nobody can approve in a headless run; do not retry it", replay=replay, hook=pattern)
    return ToolError("ToolNotAllowed", f"a PreToolUse hook refused this call: {reason}", hook=pattern)
