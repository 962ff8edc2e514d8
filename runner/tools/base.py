"""The tool contract and the structured error every tool failure becomes."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import threading
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol

from runner.core.outcome import Interrupted
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
)


class ToolError(Exception):
    """A failure the model can act on; becomes `{"error": {"type", "message", ...}}`."""

    def __init__(self, type_: str, message: str, **extra: object) -> None:
        assert type_ in ERROR_TYPES, type_
        super().__init__(message)
        self.type = type_
        self.message = message
        self.extra = extra
        # (code, message): what the workflow's author should hear of this failure besides the model (a sandbox
        # that refused a write), each a `warning` event after the call's result (runner/engine/call.py finish).
        self.warnings: list[tuple[str, str]] = []

    def payload(self) -> dict[str, Any]:
        return {"error": {"type": self.type, "message": self.message, **self.extra}}


class Abort(threading.Event):
    """A stop that also holds when its parent's does: set by the run's signal handler at the root, and by a group of
    calls that ends early for what still runs in it (runner/engine/batch.py), without stopping the group's siblings.
    Tools only ask `is_set()`."""

    def __init__(self, parent: threading.Event | None = None) -> None:
        super().__init__()
        self.parent = parent

    def is_set(self) -> bool:
        return super().is_set() or (self.parent is not None and self.parent.is_set())


class Shield:
    """Holds a run's interrupt while a tool starts a process: a signal that lands between the fork and the
    tool's try/finally that kills the process group would leave the process running after the run (a
    loaded machine can deschedule the runner for that long). Held, it is raised by `leave`, inside that try.
    Shared by a run's contexts (a subagent's is a copy): the signal handler sees one. Calls of one reply and child
    agents start processes from several threads: the counts are changed under a lock, and a held signal is raised
    by whichever thread's `leave` ends the last start (on a worker, its call's result carries it to the loop)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.active = 0
        self.pending: int | None = None
        self.exiting: int | None = None  # a second signal while a process starts: exit once it is tracked
        self.signalled: int | None = None  # the run's interrupt, once one came: what a loop that sees `abort` raises
        self.groups: set[int] = set()  # process groups started and not killed yet: a hurried exit kills them

    def enter(self) -> None:
        with self._lock:
            self.active += 1

    def track(self, pgid: int) -> None:
        """Called before `leave`, so no signal can find the process started and not tracked."""
        self.groups.add(pgid)

    def untrack(self, pgid: int) -> None:
        self.groups.discard(pgid)

    def kill_all(self) -> None:
        for pgid in list(self.groups):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, signal.SIGKILL)

    def exit_now(self, signum: int) -> None:
        """For the signal handler's second signal ("exit at once"): every tracked group is SIGKILLed, then the
        process exits 128 + signum. While a process is being started (its group not known yet), deferred to
        `leave`, which comes right after it is tracked."""
        if self.active:
            self.exiting = signum
            return
        self.kill_all()
        os._exit(128 + signum)

    def hold(self, signum: int) -> bool:
        """For the signal handler: True when the signal is held (a process is being started)."""
        if self.active:
            self.pending = signum
            return True
        return False

    def leave(self) -> None:
        """The process is started and guarded (or failed to start): a held signal is raised now."""
        with self._lock:
            self.active -= 1
            last = not self.active
            exiting = self.exiting if last else None
            signum, self.pending = (self.pending, None) if last else (None, self.pending)
        if exiting is not None:
            self.exit_now(exiting)
        if signum is not None:
            raise Interrupted(signum)


NetDecide = Callable[[str, int], Verdict]  # (host, port) -> the egress proxy's verdict for one connection


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
    (`skill`), its delegation (`task`). Tool instances are definitions, shared by the run's agent and every child (a
    child's registry is its parent's, narrowed); runner/engine/build.py gives each agent a state of its own."""

    plan: Plan = field(default_factory=Plan)
    skill: Restriction = field(default_factory=Restriction)  # the loaded skill's allowed-tools
    delegation: Delegator | None = None  # None: this agent cannot delegate (no `task`, or at the depth limit)
    tools: tuple[str, ...] = ()  # the names of the agent's tools (a task call's risk: can its child run commands)


@dataclass
class ToolContext:
    workspace: Path  # resolved, absolute
    protected: tuple[Path, ...] = ()  # never written, whatever the policy says
    deadline: float | None = None  # time.monotonic() at which the run's wall clock ends
    default_timeout_s: float = 120.0
    abort: threading.Event = field(default_factory=threading.Event)  # the run stops (or this call's group: Abort)
    shield: Shield = field(default_factory=Shield)  # interrupts held while a process starts (tools/bash.py)
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
    agent: str | None = None  # the subagent whose context this is (its id, `a1`); None: the run's own agent
    call_id: str = ""  # the call being run, and its tool: for what `authorize` records (set by `for_call`)
    call_tool: str = ""
    # (call_id, tool) -> the egress proxy's decider for that call's processes (runner/engine/call.py net_decider):
    # a connection is decided and recorded under the call whose command made it, whichever agent's it is.
    net: NetHook | None = None
    sandbox: Sandbox | None = None  # wraps every process a tool starts; None runs it bare
    masker: Masker | None = None  # what a tool writes to the run directory (spill files) is masked; None: as is
    state: AgentState = field(default_factory=AgentState)  # this agent's own plan, skill and delegation

    def for_call(self, call_id: str, tool: str, abort: threading.Event | None = None) -> ToolContext:
        """This context for one call: calls of one reply may run at once, each with its own copy (what is
        shared — the shield, the run's settings — is shared by reference); `abort`: its group's stop."""
        return dataclasses.replace(self, call_id=call_id, call_tool=tool, abort=abort or self.abort)


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
