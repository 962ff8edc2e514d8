"""Typed events. The loop emits them; consumers (the JSONL log, the stderr
progress line, the summary) each read the same stream.

`to_record` is the only serialization: canonical JSON objects, one per line.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar


@dataclass(frozen=True)
class Event:
    type: ClassVar[str] = "event"
    # The field holding what the model sent or received, for which a masked log records `redacted`.
    content_field: ClassVar[str | None] = None
    # Which agent emitted it: None for the run's own; a subagent's {id, name, parent_call_id, depth}
    # (set once by `tag`, before any consumer sees the event; every record carries it).
    agent: ClassVar[dict[str, Any] | None] = None
    # A field recorded under another name: one consumers rely on that Python cannot spell (`from`).
    renamed: ClassVar[dict[str, str]] = {}

    def fields(self) -> dict[str, Any]:
        return {self.renamed.get(f.name, f.name): getattr(self, f.name) for f in dataclasses.fields(self)}


def tag(event: Event, agent: dict[str, Any]) -> Event:
    """The event as a subagent's. An event already tagged keeps its agent (a grandchild's events pass
    through its parent's emit on the way to the log)."""
    if event.agent is None:
        object.__setattr__(event, "agent", agent)  # frozen: set once here, never changed after
    return event


def agent_id(event: Event) -> str:
    return event.agent["id"] if event.agent else MAIN


MAIN = "main"  # the run's own agent, in summaries (its events carry `agent: null`)


def call_ref(agent: dict[str, Any] | None, call_id: str) -> str:
    """A call as `replay --call` names it: a subagent's prefixed with its agent id (`a1:call_3`), since
    call ids are only unique within one conversation (local servers number them from 0 in each)."""
    return f"{agent['id']}:{call_id}" if agent else call_id


@dataclass(frozen=True)
class RunStarted(Event):
    type: ClassVar[str] = "run_started"
    version: str
    model: str
    policy: str
    mode: str
    workspace: str
    task_sha256: str
    max_turns: int
    timeout_s: float
    replay_of: str | None = None  # `agent-run replay`: the run whose denied calls are approved
    approved_calls: list[str] | None = None
    sandbox: dict[str, Any] | None = None  # {mode, active, mechanism, network, reason}
    # `resume`/`fork`: {run_id, run_dir, kind, at_turn, status} of the run this one continues
    resumed_from: dict[str, Any] | None = None
    policy_sha256: str | None = None  # of policy.json as written: a killed run's snapshot is checked against it
    model_params: dict[str, Any] | None = None  # temperature, top_p, max_output_tokens, seed, reasoning_effort set
    # what the system prompt holds beyond agent-run's own text: [{source, path, sha256, bytes, truncated}]
    instructions: list[dict[str, Any]] | None = None
    # AGENT_RUN_AUDIT_KEY's id (first 16 hex of HMAC(key, "agent-run key id")): every `prev` is an HMAC under it
    audit_key_id: str | None = None
    # resume/fork/replay of a run whose log ended in a torn line: the bytes left out (null: whole tail)
    torn_tail_bytes: int | None = None
    # what a continuation must restore, each with its sha256: {mcp_configs: [{path, sha256}],
    # agents: [{name, path, sha256, trusted}]} (instructions, output schema, skills: `instructions`)
    inputs: dict[str, Any] | None = None
    # "--fork-review": a review-only run (runner/run/review_only.py); its resumes, forks and replays stay one
    restriction: str | None = None
    # AGENT_RUN_TOOL_RESULTS=user: {nonce, earlier}: the nonce of this run's tool-result frames, and the nonce each
    # result it carries was sent in, by sha256 of its call id and text (runner/core/frames.py ResultFrames)
    result_frames: dict[str, Any] | None = None


@dataclass(frozen=True)
class ModelRequest(Event):
    type: ClassVar[str] = "model_request"
    turn: int
    message_count: int
    estimated_tokens: int
    prompt_bytes: int
    prompt_sha256: str
    stage: str  # the latest pruning stage applied: none, soft_trim, hard_clear, summarize
    prefix_hash: str  # sha256 of tools + system prompt + task: the part that must never change
    extends_previous: bool  # this prompt's messages start with the previous request's
    # {path, sha256} of the messages as sent (history/<n>.json), written when they do not simply extend
    # the previous request's (a run's first request, after pruning): with the events after it, the
    # conversation can be rebuilt exactly (runner/record/conversation.py)
    snapshot: dict[str, str] | None = None


@dataclass(frozen=True)
class ModelRetry(Event):
    type: ClassVar[str] = "model_retry"
    turn: int
    attempt: int
    error: str
    delay_s: float
    # The wait the server asked for (Retry-After / retry-after-ms), when it asked: then delay_s is that wait.
    requested_s: float | None = None


@dataclass(frozen=True)
class ModelResponse(Event):
    type: ClassVar[str] = "model_response"
    content_field: ClassVar[str | None] = "message"
    turn: int
    message: dict[str, Any]
    usage: dict[str, int]
    finish_reason: str | None
    duration_s: float
    redacted: dict[str, Any] | None = None  # set by the log that masks it: {kinds, sha256 of the unmasked}


@dataclass(frozen=True)
class ToolCall(Event):
    type: ClassVar[str] = "tool_call"
    content_field: ClassVar[str | None] = "arguments"
    turn: int
    call_id: str
    tool: str
    arguments: str
    redacted: dict[str, Any] | None = None  # as ModelResponse.redacted
    source: str | None = None  # "text": parsed from the reply's text (a small model's <tool_call>…); "preset": the
    # runner's own, before the first request (runner/run/preload.py); None: tool_calls
    call_index: int = 0  # its position among the reply's calls (calls of one reply may run concurrently)


@dataclass(frozen=True)
class PermissionDecision(Event):
    """The permission audit record (its camelCase fields, eventId to timestamp), plus what ties it to the call."""

    type: ClassVar[str] = "permission_decision"
    eventId: str
    sessionId: str
    mode: str
    decision: str
    permissionDomain: str
    targets: list[dict[str, Any]]
    rulePattern: str | None
    timestamp: str
    call_id: str
    tool: str
    policy_decision: str
    rule: dict[str, Any] | None
    replay: str | None = None
    approve: list[str] | None = None
    rerun: str | None = None
    risk: str | None = None  # low | medium | high: the riskiest target's (runner/policy/risk.py)
    approval_scope: str | None = None  # policy | run | call | mode (runner/policy/decide.py approval_scope)

    @property
    def denied(self) -> bool:
        """Whether the run refused what this decided (a headless `ask` included, full_access's `auto_approved`
        not): one of summary.json's denials, and what makes a call's audit.jsonl line `deny`."""
        return self.decision == "deny"


@dataclass(frozen=True)
class ToolResult(Event):
    type: ClassVar[str] = "tool_result"
    content_field: ClassVar[str | None] = "content"
    call_id: str
    tool: str
    ok: bool
    error_type: str | None
    bytes: int
    sha256: str
    duration_s: float
    details: dict[str, Any] = field(default_factory=dict)
    content: str = ""  # what the model received (the log's copy masked): a run can be resumed from its events
    redacted: dict[str, Any] | None = None  # as ModelResponse.redacted
    call_index: int = 0  # as ToolCall.call_index
    error_class: str | None = None  # a failure's: recoverable | fixable | fatal (runner/tools/base.py), never sent


@dataclass(frozen=True)
class McpServerStarted(Event):
    type: ClassVar[str] = "mcp_server_started"
    server: str  # the name in the configuration
    transport: str  # stdio | http
    name: str | None  # what the server calls itself
    version: str | None
    tools: int
    duration_s: float


@dataclass(frozen=True)
class McpServerFailed(Event):
    """A server that did not start, or stopped working during the run: the run goes on without it."""

    type: ClassVar[str] = "mcp_server_failed"
    server: str
    phase: str  # start | call
    kind: str  # spawn, timeout, crashed, protocol, rpc_error, closed, refused (the policy), config
    message: str
    required: bool


@dataclass(frozen=True)
class UserMessage(Event):
    """A user message the runner added to the conversation (why a resumed run was stopped, a nudge
    after an unusable answer): in the log, so the conversation can be rebuilt from it."""

    type: ClassVar[str] = "user_message"
    content_field: ClassVar[str | None] = "content"
    turn: int
    # resume | fork | empty_answer | text_tool_call | recitation | output_schema | stop_hook | answer_refused |
    # check_failed
    reason: str
    content: str
    redacted: dict[str, Any] | None = None  # as ModelResponse.redacted


@dataclass(frozen=True)
class AnswerRefused(Event):
    """A final answer the answer rules refused (runner/guards/answers.py): the model is told what was seen (the
    user_message after it) and asked for an action."""

    type: ClassVar[str] = "answer_refused"
    turn: int
    reason: str  # quoted_call | claimed_change | handed_over | announced | text_calls | tool_error


@dataclass(frozen=True)
class GuardWarning(Event):
    """A guard's warning, appended to the result of `call_id` for the model to read."""

    type: ClassVar[str] = "loop_warning"
    call_id: str
    detector: str
    message: str


@dataclass(frozen=True)
class RunWarning(Event):
    """Something a run refused or ignored that the workflow's author should hear about (a repository
    profile that would shadow a trusted one, front matter an untrusted task may not set, …): one event
    type for every such case, told apart by `code`, so a consumer need not learn a new type for each."""

    type: ClassVar[str] = "warning"
    code: str  # stable, snake_case: what a workflow greps for (e.g. profile_shadowed)
    message: str


@dataclass(frozen=True)
class Compaction(Event):
    """A pruning step: stage 2 (hard_clear) or 3 (summarize, or summarize_failed)."""

    type: ClassVar[str] = "compaction"
    turn: int
    stage: str
    before_tokens: int
    after_tokens: int
    cleared: dict[str, int]  # cleared tool results by tool name
    summary: str | None
    history: str | None  # the snapshot of the full history written before a summary
    trigger: str | None = None  # why a summary: tokens (the share), messages (maxMessages), operator (--compact)
    delayed_for_cache: int = 0  # requests sent without this summary while the prompt cache was warm


@dataclass(frozen=True)
class RunInterrupted(Event):
    type: ClassVar[str] = "interrupted"
    signal: str
    during: str  # the last event before the signal: what was in flight


@dataclass(frozen=True)
class NetworkRequest(Event):
    """A connection a sandboxed command asked the egress proxy for."""

    type: ClassVar[str] = "network_request"
    call_id: str
    host: str
    port: int
    decision: str  # allow | deny | auto_approved
    rule: dict[str, Any] | None


@dataclass(frozen=True)
class SubagentStarted(Event):
    """A `task` call's child agent, before its first request (runner/subagents/): tagged with its own agent."""

    type: ClassVar[str] = "subagent_started"
    call_id: str  # the parent's `task` call
    name: str  # the profile
    description: str  # the parent's short description of the subtask
    profile: str  # where the profile came from: a path relative to the workspace, or "builtin"
    trusted: bool  # from --agents or the policy (else repository content)
    model: str
    mode: str  # the child's effective mode: never wider than the parent's
    tools: list[str]  # the tools it is offered, in order
    tools_sha256: str  # of its tools array (history/agents/<id>.tools.json)
    max_turns: int
    timeout_s: float | None
    # Its scope (docs/subagents.md#scopes), so an audit tells what it was allowed without the profile file:
    disallowed_tools: list[str] = field(default_factory=list)  # its profile's disallowedTools, as written
    not_offered: dict[str, str] = field(default_factory=dict)  # the parent's tools it was not given, and why
    paths: dict[str, list[str]] | None = None  # its paths scope ({read?, write?}); None: not narrowed


@dataclass(frozen=True)
class SubagentFinished(Event):
    """A child agent's end: its answer went back to the parent as the `task` result, or an error did."""

    type: ClassVar[str] = "subagent_finished"
    call_id: str
    status: str  # success | doom_loop | max_turns | timeout | failed | stopped (the run ended meanwhile)
    reason: str | None
    turns: int
    tool_calls: int
    usage: dict[str, int]
    duration_s: float


@dataclass(frozen=True)
class CheckStarted(Event):
    """The task's `check` command starting: the runner's own call, outside the model's loop and its guards (its
    policy decision is still recorded under `call_id`, so a denied check can be replayed)."""

    type: ClassVar[str] = "check_started"
    call_id: str
    command: str
    attempt: int = 1  # the check runs again after each answer while it fails, up to --check-attempts


@dataclass(frozen=True)
class CheckFinished(Event):
    """The check's result: what decides a run that otherwise succeeded (summary `check` holds the same)."""

    type: ClassVar[str] = "check_finished"
    call_id: str
    command: str
    ok: bool
    error_type: str | None
    exit_code: int | None
    duration_s: float
    output_tail: str | None  # a failed check's last lines (masked like every event)
    output_path: str | None  # a failed check's whole output, spilled (run-dir relative)
    attempt: int = 1


@dataclass(frozen=True)
class HookStarted(Event):
    """A lifecycle hook of the policy (docs/hooks.md) starting: the workflow's own program, not a tool call (not
    counted in `tool_calls`, seen by no guard). `call_id`: the call it judges (PreToolUse, PostToolUse), else null."""

    type: ClassVar[str] = "hook_started"
    event: str  # PreToolUse | PostToolUse | Stop | SubagentStop | SessionStart
    matcher: str
    command: str
    call_id: str | None


@dataclass(frozen=True)
class HookFinished(Event):
    """A hook's end and what it decided: `decision` allow | deny | ask | block | stop, or null (it went on as
    decided; a failure says so in `error` and, onError deny aside, changes nothing)."""

    type: ClassVar[str] = "hook_finished"
    event: str
    matcher: str
    command: str
    call_id: str | None
    exit_code: int | None  # null: it did not start, or was killed
    duration_s: float
    decision: str | None
    reason: str | None  # what the model is told (a block's), masked like every event
    error: str | None  # why it failed: a timeout, another exit, unreadable output
    output_tail: str | None  # its stdout and stderr's last lines


@dataclass(frozen=True)
class ModelFallback(Event):
    """The requested model's server kept failing (retries exhausted on a server error, timeout or overload):
    the run goes on with the next model of --fallback-model, and stays on it."""

    type: ClassVar[str] = "model_fallback"
    turn: int
    from_model: str
    to_model: str
    reason: str

    renamed: ClassVar[dict[str, str]] = {"from_model": "from", "to_model": "to"}  # `from` is a keyword


@dataclass(frozen=True)
class Land(Event):
    """The run's change landed by the runner (`--land`), or why not: after the run's own ending is known, before
    run_finished (summary `land` holds the same)."""

    type: ClassVar[str] = "land"
    mode: str  # commit | branch | pr
    branch: str | None
    commit: str | None
    remote: str | None  # the URL pushed to, without credentials
    pull_request: dict[str, Any] | None  # {number, url}
    refused: list[str] | None  # the files a refusal names
    reason: str | None  # why nothing (or not everything) landed; null when it all did


@dataclass(frozen=True)
class RunFinished(Event):
    type: ClassVar[str] = "run_finished"
    status: str
    exit_code: int
    reason: str | None
    turns: int
    tool_calls: int


Emit = Callable[[Event], None]
