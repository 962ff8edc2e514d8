"""One agent, built in one place: `build_agent(spec, services, base, emit)` for the run's own agent and for every
child alike (runner/run/assemble.py, runner/subagents/delegate.py), and the pieces it is built from — the model
client a settings object names, and an agent's context manager (its compaction call, spill files and history
snapshots).

`AgentSpec` is what makes one agent (frozen: a child's is its parent's, narrowed); `Services` is built once per run
and shared by every agent (what engine/ may not import reaches it through Protocols: the change record, the
delegation of `task` calls). Nothing is patched onto an agent once it is returned.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from runner.context.estimate import Estimator
from runner.context.manager import ContextConfig, ContextManager
from runner.context.prune import ToolKinds
from runner.context.tokenizer import load_tokenizer
from runner.core.events import MAIN, Emit, ModelResponse
from runner.core.frames import ResultFrames
from runner.core.outcome import UsageError
from runner.engine.batch import parallel_of
from runner.engine.call import CallEnv, bind_hooks
from runner.engine.loop import Check, Limits, serialize_prompt
from runner.engine.recorder import Recording
from runner.engine.settings import Settings, model_params
from runner.engine.workflow_hooks import WorkflowHooks
from runner.guards.base import Guard
from runner.guards.budget import Budget
from runner.guards.denials import DenialGuard
from runner.guards.loops import LoopConfig, LoopGuard
from runner.guards.skills import SkillFollow
from runner.model.base import ChatModel, Stop
from runner.model.catalog import window_for
from runner.model.fallback import Chain, FallbackChat
from runner.model.replay import ReplayModel
from runner.model.text_calls import TextCalls
from runner.policy.model import Policy
from runner.tools.base import AgentState, Delegator, ToolContext
from runner.tools.readable import policy_decider
from runner.tools.registry import Registry
from runner.tools.spill import keep
from runner.workspace.skills import AllOf, Restricting


class EditObserver(Protocol):
    """Sees the files an edit-domain call may change before it changes them (runner/report/changes.py)."""

    def before_edit(self, paths: list[Path]) -> None: ...


class Delegations(Protocol):
    """The run's subagents (runner/subagents/delegate.py): the delegation of one agent's `task` calls."""

    def for_agent(self, agent: Agent, services: Services, emit: Emit) -> Delegator: ...


@dataclass(frozen=True)
class AgentSpec:
    """What makes one agent. The run's comes from its options; a child's is its parent's, narrowed (policy, tools,
    clock, depth)."""

    policy: Policy
    settings: Settings
    registry: Registry  # its tool definitions (a child's: its parent's, narrowed)
    max_turns: int
    deadline: float | None  # time.monotonic() at which its clock ends
    timeout_s: float | None
    history: Path  # its history snapshots
    checks: tuple[Check, ...] = ()  # the run's budgets, before each of its requests
    model: str | None = None  # None: the run's model (settings.model); a child's profile may name another
    chain: Chain | None = None  # the fallback chain it is on (the run's; None: its model's own)
    tools: list[dict[str, Any]] | None = None  # a recorded tools array it sends exactly (a continued run)
    restrictions: tuple[Restricting, ...] = ()  # what it is restricted to besides its own skill (a profile, a parent)
    info: dict[str, Any] | None = None  # a child's {id, name, parent_call_id, depth}; None: the run's own agent
    needs_model: bool = True  # False: a replay that only executes calls (it needs no endpoint or key)
    # The run's client, made before anything starts (a missing key or recording ends the run first); None: made here.
    client: ChatModel | None = None

    @property
    def depth(self) -> int:
        return self.info["depth"] if self.info else 0

    @property
    def aid(self) -> str | None:
        return self.info["id"] if self.info else None


@dataclass(frozen=True)
class Services:
    """Built once per run, shared by every agent."""

    rec: Recording
    budget: Budget
    denials: DenialGuard  # a denial in any agent is the run's
    rerun: list[str]  # the rerun's words after `agent-run`, the task last
    edits: EditObserver | None = None
    delegations: Delegations | None = None  # None: subagents are off
    hooks: WorkflowHooks | None = None  # the trusted policy's lifecycle hooks (None: it has none)
    # Set at the first reply with tool_calls any agent of the run receives (a continued run's: when its record holds
    # one): from then on `--text-tool-calls auto` reads no call in any agent's text (runner/model/text_calls.py).
    structured: threading.Event = field(default_factory=threading.Event)


@dataclass(frozen=True)
class Agent:
    """What the loop runs with."""

    spec: AgentSpec
    model: ChatModel | None  # None: built to execute calls only (a replay without --continue)
    env: CallEnv
    limits: Limits
    context: ContextManager
    tools: list[dict[str, Any]]  # what its requests send
    state: AgentState

    def recite(self, turn: int, compacted: bool) -> str | None:
        return self.state.plan.recite(turn, compacted)


def build_agent(spec: AgentSpec, services: Services, base: ToolContext, emit: Emit) -> Agent:
    """The agent `spec` names: its tool context (from `base`, the run's, or for a child the context of the call
    that started it: its stop is that call's), its call pipeline and guards, its model, its context manager and its
    loop's limits; its own plan, skill and (below the depth limit) delegation."""
    rec, settings = services.rec, spec.settings
    state = AgentState(tools=tuple(spec.registry.names))
    below = spec.depth < settings.subagent_max_depth
    # Its own stop and clock: it stops with its caller (the run, or its group of calls), or alone at its deadline.
    own = (state.skill,) if spec.info is not None or "skill" in spec.registry.names else ()
    parts = (*spec.restrictions, *own)
    restrict = (parts[0] if len(parts) == 1 and spec.info is None else AllOf(parts)) if parts else None
    # The files its tools meet are narrowed as its calls are: by the same restriction.
    ctx = dataclasses.replace(base, cancel=base.cancel.child(spec.deadline), call_id="", call_tool="", agent=spec.aid,
                              decide=policy_decider(spec.policy), restrict=restrict,
                              state=state, truncation=dataclasses.replace(base.truncation,
                                                                          delegate=base.truncation.delegate and below))
    loops = LoopGuard(LoopConfig.from_policy(spec.policy.sections.get("doomLoop", {})))
    aid = spec.aid or MAIN
    guards: list[Guard] = [services.denials, loops, SkillFollow(
        state, lambda: rec.summary.turns if spec.info is None else rec.summary.agents.get(aid, {}).get("turns", 0))]
    env = CallEnv(spec.registry, spec.policy, ctx, rec.run_id, rec.run_dir, services.rerun, guards,
                  before_edit=services.edits.before_edit if services.edits is not None else None, home=rec.home,
                  restrict=restrict,
                  agent=spec.info, hooks=services.hooks)
    bind_hooks(env, emit)
    tools = spec.registry.specs() if spec.tools is None else spec.tools
    model = (spec.client or _model(spec, ctx)) if spec.needs_model else None
    context = _context(spec, rec, model, tools, emit)
    env.admit = context.admit_bound
    limits = Limits(spec.max_turns, spec.timeout_s, (*spec.checks, context.fits),
                    (services.budget.on_reply, lambda reply, estimated: context.observe(reply.usage, estimated)),
                    text_calls=TextCalls(settings.text_tool_calls, services.structured), parallel=parallel_of(settings))
    agent = Agent(spec, model, env, limits, context, tools, state)
    if services.delegations is not None and "task" in spec.registry.names and below:
        state.delegation = services.delegations.for_agent(agent, services, emit)
    return agent


def _model(spec: AgentSpec, ctx: ToolContext) -> ChatModel:
    """A child's model: its profile's, or the run's (on the run's fallback chain)."""
    settings, name = spec.settings, spec.model or spec.settings.model
    assert spec.deadline is not None, "every agent has a clock: the run's --timeout, a child's own"
    if name.startswith("replay:"):  # a recorded run replayed: this child's own recorded replies
        return ReplayModel(Path(name[len("replay:"):]).expanduser(), agent=spec.aid)
    return make_model(settings.model_copy(update={"model": name}), spec.deadline, chain=spec.chain, stop=ctx.cancel)


def _context(spec: AgentSpec, rec: Recording, model: ChatModel | None, tools: list[dict[str, Any]],
             emit: Emit) -> ContextManager:
    """Pruning and compaction for the agent: its compaction call goes to its own model, with its tools (so its prompt
    shares the conversation's cached prefix) and tool_choice none, bounded by its clock; its spill files go in the
    run's outputs, its history snapshots in `spec.history` (a child's under the run's, named from the run's
    directory)."""
    settings, name = spec.settings, spec.model or spec.settings.model
    if spec.info is None:
        window = None if name.startswith("replay:") else window_for(name, settings.context_window)
        root = None
    else:
        window = window_for(name, settings.context_window if name == settings.model else None)
        root = rec.run_dir
    config = ContextConfig.from_policy(spec.policy.sections.get("compaction", {}), window,
                                      ToolKinds.of(spec.registry.tools), max_messages=settings.compaction_max_messages,
                                      emergency_at=settings.compaction_emergency_at,
                                      cache_ttl_s=settings.compaction_cache_ttl_s)
    aid = spec.aid or MAIN

    def turn() -> int:
        return rec.summary.turns if spec.info is None else rec.summary.agents.get(aid, {}).get("turns", 0)

    def summarize(messages: list[dict[str, Any]]) -> str:
        assert model is not None, "an agent built without a model makes no requests"
        started = time.monotonic()
        left = spec.deadline - time.monotonic() if spec.deadline is not None else None
        # A resumed run's first request may be a summary (`resume --compact`): before any response, the turn it
        # prepares.
        at = turn() or context.turn
        reply = model.complete(messages, tools, turn=at, emit=emit, timeout=left, tool_choice="none")
        if reply.estimated:  # the server counted nothing: the client's chars/4, in the context's count (as the loop)
            reply = dataclasses.replace(reply, usage=context.estimator.counted(
                reply.usage, len(serialize_prompt(messages, tools)), context.tokens(messages, tools)))
        emit(ModelResponse(turn=at, message=reply.message, usage=reply.usage,
                           finish_reason=reply.finish_reason, duration_s=round(time.monotonic() - started, 4)))
        text = (reply.message.get("content") or "").strip()
        if not text:
            raise ValueError("the compaction call returned no text")
        return text

    def spill(content: str) -> str | None:
        return (keep(rec.ctx.outputs_dir, content, rec.ctx.truncation.ttl_days, rec.masker)
                if rec.ctx.outputs_dir else None)

    context = ContextManager(config, emit, spec.history, summarize if settings.compaction else None, spill=spill,
                             masker=rec.masker, root=root,
                             estimator=Estimator(load_tokenizer(settings.tokenizer) if settings.tokenizer else None))
    return context


def make_model(settings: Settings, deadline: float, on_delta: Callable[[int, str | None], None] | None = None,
               chain: Chain | None = None, stop: Stop | None = None, frames: ResultFrames | None = None) -> ChatModel:
    """The client for `settings.model`; with fallback models, one that goes on with the next when it stays down.
    `chain`: the run's (its own agent and the children on its model share it); None: the settings' own.
    `frames`: the run's tool-result frames (AGENT_RUN_TOOL_RESULTS=user; None: drawn for this client)."""
    if settings.model.startswith("replay:"):
        return ReplayModel(Path(settings.model[len("replay:") :]).expanduser())
    from runner.model.openai_chat import Endpoint, OpenAIChat  # the openai SDK costs ~0.5 s to import: only when used

    api_key = settings.api_key.get_secret_value() if settings.api_key else None
    if not api_key:
        if not settings.base_url:
            raise UsageError("no API key: set OPENAI_API_KEY (or point OPENAI_BASE_URL at a server that needs "
                             "none), or use --model replay:RUN_DIR")
        api_key = "not-needed"  # local servers (Ollama, llama.cpp) ignore it; the SDK insists on one

    endpoint = Endpoint(api_key, settings.base_url, settings.stream, settings.max_retries, settings.retry_base_s,
                        settings.retry_cap_s, settings.request_timeout_s, params=model_params(settings),
                        max_response_bytes=settings.max_response_bytes, max_retry_wait_s=settings.max_retry_wait_s,
                        tool_results=settings.tool_results, result_frames=frames)

    def client(name: str) -> ChatModel:
        return OpenAIChat(name, endpoint, deadline=deadline, on_delta=on_delta, stop=stop)

    chain = chain or Chain.of(settings.model, settings.fallback_models)
    return FallbackChat(chain, client, on_delta) if len(chain.names) > 1 else client(chain.current)
