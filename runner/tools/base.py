"""The tool contract and the structured error every tool failure becomes."""

from __future__ import annotations

import dataclasses
import subprocess
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol

from runner.policy.decide import CallDecision
from runner.policy.egress import Verdict
from runner.policy.model import Target
from runner.record.mask import Masker
from runner.tools.plan import Plan
from runner.tools.truncate import Limits
from runner.workspace.skills import Restriction

ERROR_TYPES = (
    "ToolNotAllowed", "ApprovalRequired", "PathTraversalBlocked", "FileTooLarge", "Timeout",
    "ExitNonZero", "IOError", "InvalidArguments", "UnknownTool", "McpError", "SubagentFailed", "ContextFull",
    "WouldOverwrite",
)


# A failure's class, for the log alone (tool_result.error_class, audit.jsonl; never in what the model reads): whether
# the same call may pass again (recoverable: a time limit, a server), the model can fix it by asking differently
# (fixable), or nothing it asks changes it (fatal: the policy or the run's own limits refused it).
ERROR_CLASSES = ("recoverable", "fixable", "fatal")
_CLASS_OF_TYPE = {"ToolNotAllowed": "fatal", "ApprovalRequired": "fatal", "PathTraversalBlocked": "fatal",
                  "Timeout": "recoverable", "McpError": "recoverable", "SubagentFailed": "fixable"}
# A failed child's class by its status (runner/subagents/delegate.py): its server down is recoverable, a denial or the
# run's own subagent limit (`limit`, `refused`) fatal, its loop or budget fixable (a narrower prompt).
_CLASS_OF_CHILD = {"model_error": "recoverable", "denied": "fatal", "limit": "fatal", "refused": "fatal",
                   "usage_error": "fatal"}


class ToolError(Exception):
    """A failure the model can act on; becomes `{"error": {"type", "message", ...}}`. `logged`: fields the log
    records beside it (tool_result.details) that the model is not sent (a child's history directory)."""

    def __init__(self, type_: str, message: str, **extra: object) -> None:
        assert type_ in ERROR_TYPES, type_
        super().__init__(message)
        self.type = type_
        self.message = message
        self.extra = extra
        self.logged: dict[str, Any] = {}
        # (code, message): what the workflow's author should hear of this failure besides the model (a sandbox
        # that refused a write), each a `warning` event after the call's result (runner/engine/call.py finish).
        self.warnings: list[tuple[str, str]] = []

    def payload(self) -> dict[str, Any]:
        return {"error": {"type": self.type, "message": self.message, **self.extra}}

    @property
    def error_class(self) -> str:
        """recoverable, fixable or fatal (ERROR_CLASSES); a stop of the run itself is fatal."""
        if isinstance(self, Cancelled) and self.why == STOPPING:
            return "fatal"
        if self.type == "SubagentFailed":
            return _CLASS_OF_CHILD.get(str(self.extra.get("status")), "fixable")
        return _CLASS_OF_TYPE.get(self.type, "fixable")


class Cancelled(ToolError):
    """Raised by `Cancel.check`: the run (or this call's group, or this agent's caller) is stopping, or the wall clock
    ran out. A ToolError (a `Timeout` the model reads) where a tool lets it through; a tool that says more catches it
    (`why` is the reason)."""

    def __init__(self, why: str) -> None:
        super().__init__("Timeout", why)
        self.why = why


STOPPING = "the run is stopping"
TIME_UP = "the run's time is up"


class Cancel(Protocol):
    """The one way to stop work (runner/engine/cancel.py implements it): one stop and one monotonic deadline, seen
    alike on every thread. A tool never runs past it: it waits at most until it (`wait`, `sleep`, `remaining`), asks
    it between steps of a long computation (`check`, `why`), and starts a process inside `starting_process`, so that
    an interrupt can never find a process started and not yet killable (runner/tools/process.py run_process). A
    group of calls and a child agent get a `child`, which also stops when its parent does."""

    @property
    def deadline(self) -> float | None:
        """time.monotonic() at which the time runs out (the earlier of this and every parent's); None: no limit."""

    @property
    def signalled(self) -> int | None:
        """The run's interrupt (its signal number), once one came; None otherwise."""

    def stopping(self) -> bool:
        """The stop was asked (an interrupt, the end of the run, this group's or this agent's caller's end)."""

    def why(self) -> str | None:
        """Why work must end now: STOPPING, TIME_UP, or None to go on."""

    def check(self) -> None:
        """Raises Cancelled when `why` says to stop."""

    def remaining(self) -> float | None:
        """Seconds left before the deadline (never below 0); None for no deadline."""

    def sleep(self, seconds: float) -> bool:
        """Waits `seconds` at most; True as soon as the stop is asked (then sooner)."""

    def wait(self, proc: subprocess.Popen[Any], timeout: float | None = None) -> bool:
        """Waits for `proc` to exit: True once it has; False when the stop is asked, the deadline passes or `timeout`
        seconds have gone by first (the process is left to the caller to kill)."""

    def starting_process(self) -> AbstractContextManager[Callable[[int], None]]:
        """For the span of a process's start: an interrupt that lands inside is held, and raised (Interrupted) on the
        way out. Gives `track(pgid)`: called once the process exists, a run that ends (or a group that lets go of its
        calls) kills that process group; `forget` it once the process is killed."""

    def forget(self, pgid: int) -> None:
        """The process group is killed: its number may be reused."""

    def child(self, deadline: float | None = None, time_up: str | None = None) -> Cancel:
        """A stop for part of the work (a group of calls, a child agent, a call with its own time limit): stops with
        this one, or alone (`stop`); its deadline is the earlier of `deadline` and this one's; `time_up`: what `why`
        says when its own deadline passes first (default TIME_UP)."""

    def stop(self) -> None:
        """Asks this stop and every child's."""

    def kill_processes(self) -> None:
        """SIGKILL every process group started under this stop and not killed yet (the run's end; a group of calls
        letting go of those that did not stop)."""

    def held(self) -> AbstractContextManager[None]:
        """A block an interrupt must not cut (an event being written): one that lands inside is raised on the way
        out."""


NetDecide = Callable[[str, int], Verdict]  # (host, port) -> the egress proxy's verdict for one connection


class Refusing(Protocol):
    """What may refuse a call before the policy (runner/workspace/skills.py Restricting is one): why, or None."""

    def refuses(self, tool: str, targets: list[Target]) -> str | None: ...


class Sandbox(Protocol):
    """What a tool asks of the sandbox every process it starts runs in (runner/sandbox/runtime.py)."""

    @property
    def active(self) -> bool: ...

    def wrap(self, argv: list[str], env: Mapping[str, str], *,
             caller: str | None = None) -> tuple[list[str], dict[str, str]]: ...

    def calling(self, decide: NetDecide | None) -> AbstractContextManager[str | None]: ...

    def describe(self) -> dict[str, Any]: ...

    def read_only(self, path: Path) -> str | None:
        """The mount the sandbox made read-only that shows `path` to a command, or None."""
        ...


class Authorizer(Protocol):
    """Decides targets a running tool meets (a redirect's URL), recorded under (call_id, tool); raises ToolError
    when they are not allowed (runner/engine/call.py authorize_within)."""

    def __call__(self, targets: list[Target], call_id: str, tool: str, /) -> None: ...


class NetHook(Protocol):
    """(call_id, tool) -> the egress proxy's decider for that call's processes (runner/engine/call.py
    net_decider): a connection is decided and recorded under the call whose command made it."""

    def __call__(self, call_id: str, tool: str, /) -> NetDecide: ...


class Delegator(Protocol):
    """An agent's `task` calls (runner/subagents/delegate.py): a child for a call, its place reserved in the model's
    order before calls of one reply run at once."""

    def reserve(self, call_id: str, args: dict[str, Any]) -> None: ...

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput: ...


@dataclass
class AgentState:
    """What one agent's calls change for it, never shared with another agent: its plan (`todo`), the skill it loaded
    (`skill`), its delegation (`task`), the files it has seen (`read`, `write`, `edit`: what `write` may replace).
    Tool instances are definitions, shared by the run's agent and every child (a child's registry is its parent's,
    narrowed); runner/engine/build.py gives each agent a state of its own."""

    plan: Plan = field(default_factory=Plan)
    skill: Restriction = field(default_factory=Restriction)  # the loaded skill's allowed-tools
    delegation: Delegator | None = None  # None: this agent cannot delegate (no `task`, or at the depth limit)
    tools: tuple[str, ...] = ()  # the names of the agent's tools (a task call's risk: can its child run commands)
    # The resolved paths this agent has read, written or edited in this run: `write` replaces only these unless told
    # to (issue 44). Its own, not a child's: a child's answer says what it chose to, not what the file holds.
    seen: set[str] = field(default_factory=set)
    # The resolved paths the runner read for this agent before its first request (`--preset small`,
    # runner/run/preload.py), each with the sha256 of what it held: their text is in its conversation, but `write`
    # replaces only what the agent read itself, and its own first `read` of one unchanged says so (tools/read.py).
    shown: dict[str, str] = field(default_factory=dict)


@dataclass
class ToolContext:
    workspace: Path  # resolved, absolute
    # The run's stop and wall clock (or this call's group's, or a child agent's): runner/engine/cancel.py.
    cancel: Cancel
    protected: tuple[Path, ...] = ()  # never written, whatever the policy says
    default_timeout_s: float = 120.0
    web: dict[str, Any] = field(default_factory=dict)  # the policy's `web` section (allowPrivateNetworks, ...)
    outputs_dir: Path | None = None  # where spill files go (<run_dir>/outputs); None: not kept
    run_dir: Path | None = None  # this run's directory (memory_search reads its events.jsonl)
    truncation: Limits = field(default_factory=Limits)
    bash: dict[str, Any] = field(default_factory=dict)  # the policy's `bash` section
    # Decides targets a tool meets while it runs (a redirect's URL), recorded under (call_id, tool); raises
    # ToolError when not allowed.
    authorize: Authorizer | None = None
    # Decides targets without recording them: a file grep, glob or list meets, skipped unless allowed.
    # None (unit tests, explain): nothing is skipped.
    decide: Callable[[list[Target]], CallDecision] | None = None
    # What narrows the policy for this agent (a subagent profile's tools and paths scope, a loaded skill's
    # allowed-tools, a review-only run): the same object its calls are checked against. A file grep, glob or list
    # meets is asked of it, with the call's tool, before `decide`; None: nothing narrows.
    restrict: Refusing | None = None
    agent: str | None = None  # the subagent whose context this is (its id, `a1`); None: the run's own agent
    call_id: str = ""  # the call being run, and its tool: for what `authorize` records (set by `for_call`)
    call_tool: str = ""
    # (call_id, tool) -> the egress proxy's decider for that call's processes (runner/engine/call.py net_decider):
    # a connection is decided and recorded under the call whose command made it, whichever agent's it is.
    net: NetHook | None = None
    sandbox: Sandbox | None = None  # wraps every process a tool starts; None runs it bare
    masker: Masker | None = None  # what a tool writes to the run directory (spill files) is masked; None: as is
    state: AgentState = field(default_factory=AgentState)  # this agent's own plan, skill and delegation

    def for_call(self, call_id: str, tool: str, cancel: Cancel | None = None) -> ToolContext:
        """This context for one call: calls of one reply may run at once, each with its own copy (what is
        shared — the run's settings — is shared by reference); `cancel`: its group's stop."""
        return dataclasses.replace(self, call_id=call_id, call_tool=tool, cancel=cancel or self.cancel)


@dataclass
class ToolOutput:
    """`content` goes to the model; `details` only to the event log."""

    content: str
    details: dict[str, Any] = field(default_factory=dict)


class Tool:
    name: ClassVar[str]
    description: ClassVar[str]
    domain: ClassVar[str]
    schema: ClassVar[dict[str, Any]]
    # Which end of a long result the model sees: the head (listings, files) or the tail (bash).
    keep: ClassVar[str] = "head"
    # A call may give `max_bytes`: its result is cut below the policy's byte limit (Limits.for_call).
    sized: ClassVar[bool] = False
    # The schema is sent without `additionalProperties: false`, `minLength: 1` and `minimum: 0|1` (arguments are
    # still validated with them, and the error names what is wrong): tool definitions are most of a small model's
    # first prompt, and these say nothing a model needs; a grammar-constrained server (llama.cpp) allows no other
    # property when the key is absent. An MCP server's schema is sent as given.
    closed_in_spec: ClassVar[bool] = False
    # "read": cannot change the workspace or the world, may run beside other such calls of a reply
    # (--parallel-calls); "agent": a child agent (--parallel-agents); None: runs alone, in the model's order.
    concurrent: ClassVar[str | None] = None
    # The call's risk before its targets (runner/policy/risk.py): "low" only reads, "medium" acts in the workspace,
    # "high" deletes or reaches the network; None: its domain's level.
    risk: ClassVar[str | None] = None
    # What pruning may do to its calls (runner/context/prune.py ToolKinds): "whole" — its result is an instruction
    # or an answer the model asked for, never trimmed, cleared or summarized; "protected" — its result is kept when
    # old results are cleared, and carried into a summary; "by_reference" — protected, and its large arguments
    # (what the file it wrote now holds) are kept by reference once it has run; None: pruned like any result.
    context_class: ClassVar[str | None] = None
    # Other agents' names for it (Claude Code's), lower case or not: what a skill's `allowed-tools` or a profile's
    # `tools` written for them means here (runner/subagents/builtin.py ALIASES is the table of them all).
    aliases: ClassVar[tuple[str, ...]] = ()
    # When a run offers it: "always"; "configured" — only when the trusted environment configures it (web_search:
    # AGENT_RUN_SEARCH_URL); "added" — when the run has what it needs (skill: skills; task: subagents on).
    offered: ClassVar[str] = "always"
    # A call of it changes which calls after it are allowed (a skill's allowed-tools): a stretch of calls run at
    # once ends at it (runner/engine/batch.py).
    narrows: ClassVar[bool] = False

    def reserve(self, args: dict[str, Any], ctx: ToolContext, call_id: str) -> None:
        """Called in the model's order once the call is allowed, before it runs (perhaps beside others): for what
        must not depend on which of several calls starts first. Raises ToolError to refuse the call."""

    def targets(self, args: dict[str, Any], ctx: ToolContext) -> list[Target]:
        """What the policy decides for these arguments (see runner.policy.targets)."""
        raise NotImplementedError

    def risk_of(self, args: dict[str, Any], ctx: ToolContext) -> str | None:
        """This call's own risk level before its targets: the class's `risk`, unless its arguments say more."""
        return self.risk

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        raise NotImplementedError

    def restore(self, state: AgentState, events: list[dict[str, Any]], upto_turn: int) -> None:
        """A resumed or forked run's agent picks up what this tool keeps in its `state` (a plan) from the recorded
        run's own `events`, as they were by turn `upto_turn` (runner/sessions/resume.py); most tools keep none."""

    def spec(self) -> dict[str, Any]:
        """The OpenAI `tools` entry."""
        schema = self.schema if self.closed_in_spec else _open(self.schema)
        return {"type": "function", "function": {"name": self.name, "description": self.description,
                                                 "parameters": schema}}


# `minimum` 0 or 1 on a count says nothing a model needs either (issue 34 paid for new arguments with it).
SENT_WITHOUT = (("additionalProperties", False), ("minLength", 1), ("minimum", 0), ("minimum", 1))


def _open(node: object) -> object:
    """`node` without `additionalProperties: false` and `minLength: 1`, at any depth."""
    if isinstance(node, dict):
        return {k: _open(v) for k, v in node.items() if (k, v) not in SENT_WITHOUT}
    if isinstance(node, list):
        return [_open(v) for v in node]
    return node
