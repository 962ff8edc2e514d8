"""A `task` call's child agent: its own loop, in-process, with a fresh conversation — and never more
rights than its parent (docs/subagents.md).

No escalation, by construction:
- the child's policy is its parent's (approvals, hard limits, a narrowing task policy and all), in the
  parent's mode or narrower: a profile's `mode` can drop `full_access`, never add it;
- its tools are picked from its parent's (a profile's `tools` filters them and narrows `bash` to the
  patterns it names); `task` itself only below the depth limit;
- its processes run in the run's sandbox, its files are the run's workspace (changes tracked alike).

Shared with the run: the token and cost budgets, the turns (every agent's requests count against
`--max-turns`), the wall clock (a child also has its own, `subagents.timeoutSeconds`), the denial
guard (a denial in a child is a denial of the run: summary, exit 3, a replay that works). Its own: a
doom-loop guard, its `max_turns`, its plan (`todo`), its context (compaction, history snapshots in
history/agents/<id>/). A child stopped by its own guard or limit returns a structured error
(`SubagentFailed`) to the parent, which can act on it; only the run's own limits end the run.

Every event of the child goes to the run's events.jsonl with `agent: {id, name, parent_call_id, depth}`.
The `task` calls of one reply run at once, up to --parallel-agents (runner/engine/batch.py): each child has its own
CallEnv, context, emit and thread; ids are reserved in the model's order (`reserve`), what is shared is locked, and a
child told to stop (its caller is ending) stops before its next request or call.
"""

from __future__ import annotations

import contextlib
import dataclasses
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runner.core.events import MAIN, Emit, Event, ModelRequest, RunWarning, SubagentFinished, SubagentStarted, tag
from runner.core.jsonutil import canonical, sha256_text, short
from runner.core.outcome import BudgetExhausted, Denied, DoomLoop, ModelError, RunEnded, Stopped, UsageError
from runner.engine.build import Agent, AgentSpec, Services, build_agent
from runner.engine.loop import Check, LoopResult, Start, run_loop
from runner.engine.recorder import Recording
from runner.engine.settings import Settings
from runner.guards.budget import Budget
from runner.model.catalog import Price, price_for
from runner.model.fallback import Chain
from runner.policy.model import Policy
from runner.record.rundir import LogBroken, portable, write_atomic
from runner.sandbox.scope import confines, scoped
from runner.subagents.builtin import ALIASES
from runner.subagents.profiles import GENERAL, Profile
from runner.subagents.scope import PathScope, offered
from runner.subagents.tool import TaskTool
from runner.tools.base import ToolContext, ToolError, ToolOutput
from runner.tools.registry import Registry
from runner.workspace.skills import Restriction

SUBAGENT_PROMPT = """
# You are a subagent

Another agent (your parent) delegated one subtask to you: the user message is its request, and all you \
know of it. Work on it with your tools, under the same permission policy as your parent, then answer in \
plain text with what your parent needs — findings with file paths, what you changed, what is left undone. \
Your final answer is all your parent sees of your work; you cannot ask it questions.
"""


class TurnCounter:
    """The run's turns, every agent's together: `--max-turns` is one budget for the run."""

    def __init__(self, max_turns: int, used: int = 0) -> None:
        self.max_turns = max_turns
        self.used = used  # an auto-resume chain's turns before this run (runner/guards/budget.py Spent)

    def on_event(self, event: Event) -> None:
        if isinstance(event, ModelRequest):
            self.used += 1

    def before_request(self, _estimated: int) -> None:
        if self.used >= self.max_turns:
            raise BudgetExhausted(f"max turns reached ({self.max_turns}, subagents' turns included) before the "
                                  "model finished",
                                  budget={"name": "max_turns", "limit": self.max_turns, "used": self.used})


@dataclass(frozen=True)
class Child:
    """One `task` call's child: its profile and the call; replaying into a recorded child, also its recorded id, the
    tools it was sent, its first turn and its previous prompt."""

    profile: Profile
    call_id: str
    description: str
    aid: str | None = None
    tools: list[dict[str, Any]] | None = None
    first_turn: int = 1
    previous: list[dict[str, Any]] | None = None


@dataclass
class Shared:
    """One per run: what every agent's delegation shares (the run's `Delegations`, runner/engine/build.py)."""

    rec: Recording
    settings: Settings
    policy_sections: dict[str, Any]
    profiles: dict[str, Profile]
    budget: Budget
    turns: TurnCounter
    prompt: str  # a child's system prompt before its profile: agent-run's text and the project's instructions
    models: tuple[str, ...]  # models a repository profile may name (policy subagents.models)
    mode: str  # the run's own agent's
    calls: int = 0  # task calls run so far, every depth
    # Children run at once (--parallel-agents): ids, the call count and `records` change under it.
    lock: threading.Lock = field(default_factory=threading.Lock)
    next_id: int = 1  # the next child's id number (a1, a2, …)
    records: list[dict[str, Any]] = field(default_factory=list)  # summary.json `agents`, children in order

    def run_checks(self) -> tuple[Check, ...]:
        return (_run_level(self.budget.before_request), _run_level(self.turns.before_request))

    def for_agent(self, agent: Agent, services: Services, emit: Emit) -> Delegation:
        return Delegation(self, agent, services, emit)


@dataclass
class Delegation:
    """What one agent's `task` calls need: the shared run, and the calling agent."""

    shared: Shared
    parent: Agent  # the calling agent
    services: Services
    emit: Emit
    reserved: dict[str, str] = field(default_factory=dict)  # call id -> the child id `reserve` gave it

    @property
    def depth(self) -> int:  # the calling agent's: 0 for the run's own
        return self.parent.spec.depth

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        profile = self.shared.profiles[args.get("agent") or GENERAL]
        prompt = system_prompt(self.shared.prompt, profile, self.shared.rec.workspace)
        messages = [{"role": "system", "content": prompt}, {"role": "user", "content": str(args["prompt"])}]
        return self.start(Child(profile, ctx.call_id, str(args.get("description", ""))), ctx, messages)

    def start(self, child: Child, ctx: ToolContext, messages: list[dict[str, Any]]) -> ToolOutput:
        """A child for the parent's call (`ctx` is that call's: the child stops with it), on `messages` (a fresh
        conversation; or, replaying into a recorded child, its rebuilt one with the tools it was sent, its
        previous prompt and its recorded id). Its answer, or a SubagentFailed error; raises what ends the run."""
        shared, settings, rec, profile, call_id = self.shared, self.shared.settings, self.shared.rec, child.profile, \
            child.call_id
        model_name, note, price, chain = self._admit(profile)
        # Reserved in the model's order (`reserve`); a replayed child keeps its recorded id (and is counted too).
        aid = self.reserved.pop(call_id, None) or self._take(child.aid)
        info = {"id": aid, "name": profile.name, "parent_call_id": call_id, "depth": self.depth + 1}
        parent_emit = self.emit

        def emit(event: Event) -> None:
            parent_emit(tag(event, info))

        started = time.monotonic()
        narrowed = scoped(ctx.sandbox, profile.scope.readable(), profile.scope.write or ()) \
            if profile.scope is not None else None
        if narrowed is not None:  # its commands see only its paths (without one it has no `bash`: _narrowed)
            ctx = dataclasses.replace(ctx, sandbox=narrowed)
        history = rec.run_dir / "history" / "agents" / aid
        history.mkdir(parents=True, exist_ok=True)
        spec, dropped = self._narrowed(child, info, model_name, chain, history, started)
        agent = build_agent(spec, self.services, ctx, emit)
        tools = agent.tools
        # What replaying into the child sends (verified against subagent_started.tools_sha256).
        write_atomic(history.parent / f"{aid}.tools.json", canonical(tools))
        shared.budget.prices[aid] = price
        if chain is None:
            shared.budget.agent_models[aid] = model_name
        record = {"id": aid, "name": profile.name, "parent_call_id": call_id, "depth": self.depth + 1,
                  "model": model_name, "mode": agent.env.policy.mode, "status": "running", "reason": None}
        with shared.lock:
            shared.records.append(record)
        if note:
            record["warning"] = note
            print(f"agent-run: warning: {note}", file=sys.stderr)
        emit(SubagentStarted(call_id=call_id, name=profile.name, description=child.description,
                             profile=portable(profile.path, rec.workspace) if profile.path else "builtin",
                             trusted=profile.trusted, model=model_name, mode=agent.env.policy.mode,
                             tools=[t["function"]["name"] for t in tools], tools_sha256=sha256_text(canonical(tools)),
                             max_turns=agent.limits.max_turns, timeout_s=settings.subagent_timeout_s,
                             disallowed_tools=list(profile.disallowed), not_offered=dropped,
                             paths=profile.scope.describe() if profile.scope is not None else None))
        try:
            hooks = agent.env.hooks  # the policy's SubagentStop hooks judge the child's answer
            judge = hooks.answer_judge("SubagentStop", agent.spec.info, emit, agent.env.ctx.cancel) \
                if hooks is not None and hooks.any("SubagentStop") else None
            result: LoopResult | RunEnded = run_loop(agent, messages, emit, Start(child.first_turn, child.previous),
                                                     check_answer=judge)
        except RunEnded as exc:
            if _ends_run(exc, rec.ctx.cancel.deadline):
                self._stopped(record, emit, call_id, started, exc.reason)
                raise
            result = exc
        except BaseException as exc:  # a signal (Interrupted), a bug of ours: the log still says how it ended
            self._stopped(record, emit, call_id, started, getattr(exc, "reason", None) or type(exc).__name__)
            raise
        finally:
            if agent.state.plan.items:
                record["todos"] = agent.state.plan.items
        return self._finish(result, record, emit, call_id, started, messages)

    def _narrowed(self, child: Child, info: dict[str, Any], model_name: str, chain: Chain | None, history: Path,
                  started: float) -> tuple[AgentSpec, dict[str, str]]:
        """The parent's spec, narrowed for the child: the parent's policy in its mode or narrower, the parent's tools
        (`task` only below the depth limit) cut to the profile's, the parent's restrictions and the profile's, a
        clock of its own within the run's; and the parent's tools it is not offered, with why (`offered`)."""
        settings, parent, profile = self.shared.settings, self.parent, child.profile
        policy = parent.env.policy
        if policy.mode == "full_access" and profile.mode == "agent":
            policy = policy.with_mode("agent")  # narrower: `ask` is a denial again (never the other way)
        run_deadline = self.shared.rec.ctx.cancel.deadline
        deadline = started + settings.subagent_timeout_s
        deadline = min(deadline, run_deadline) if run_deadline is not None else deadline
        below = self.depth + 1 < settings.subagent_max_depth
        tools = [t for t in parent.env.registry.tools if t.name != "task" or below]
        kept, dropped = offered([t.name for t in tools], {t.name: t.domain for t in tools},
                                 None if profile.tools is None else [name for name, _ in profile.tools],
                                 profile.disallowed, profile.scope, confines(parent.env.ctx.sandbox))
        registry = Registry([t for t in tools if t.name in kept])
        restrictions = tuple(r for r in (parent.env.restrict,) if r is not None)
        if profile.tools is not None:
            restrictions = (Restriction(skill=profile.name, allowed=profile.tools, profile=True), *restrictions)
        if profile.scope is not None:
            restrictions = (PathScope(profile.name, profile.scope), *restrictions)
        return AgentSpec(policy, settings, registry, profile.max_turns or settings.subagent_max_turns, deadline,
                         settings.subagent_timeout_s, history, checks=self.shared.run_checks(), model=model_name,
                         chain=chain, tools=child.tools, restrictions=restrictions, info=info), dropped

    def reserve(self, call_id: str, args: dict[str, Any]) -> None:
        """In the model's order, before any of a reply's `task` calls runs (they may run at once): the child's id
        and its place under the run's subagent limit, so neither depends on which child starts first. A child
        refused for its model (`_admit`) takes neither, as before."""
        self._admit(self.shared.profiles[args.get("agent") or GENERAL])
        self.reserved[call_id] = self._take(None)

    def _take(self, aid: str | None) -> str:
        """A child's id (`aid`: a replayed child's recorded one), counted against the run's subagent limit."""
        shared = self.shared
        with shared.lock:
            if shared.calls >= shared.settings.subagent_max_calls:
                raise ToolError("SubagentFailed", "this run's subagent limit is reached "
                                f"({shared.settings.subagent_max_calls} task calls, subagents.maxCalls): do the rest "
                                "yourself", status="limit")
            shared.calls += 1
            aid = aid or f"a{shared.next_id}"
            shared.next_id = max(shared.next_id, int(aid[1:]) + 1)
            return aid

    def _admit(self, profile: Profile) -> tuple[str, str | None, Price | None, Chain | None]:
        """The child's model, a note about it, its price and the run's fallback chain when the child is on it — or a
        SubagentFailed the parent can act on: the run's subagent limit is reached, or a cost budget cannot be kept
        on an unpriced model. A child on the run's model starts on the model the run is on now (after a fallback,
        the fallback), and a fallback in it moves the run too (runner/model/fallback.py); one on its profile's
        model has a chain of its own."""
        settings = self.shared.settings
        model_name, note = self._model_for(profile)
        price, _source = price_for(model_name, self.shared.policy_sections.get("budget", {}).get("prices"))
        if settings.max_cost_usd is not None and price is None and model_name != settings.model:
            raise ToolError("SubagentFailed", f"profile {profile.name!r} runs on {model_name}, which has no price: "
                            "--max-cost-usd cannot be kept (add it to the policy's budget.prices)", status="refused")
        chain = self.shared.budget.chain if model_name == settings.model else None
        return (chain.current if chain is not None else model_name), note, price, chain

    def _stopped(self, record: dict[str, Any], emit: Emit, call_id: str, started: float, reason: str) -> None:
        """The run ended while this child ran: recorded as `stopped` (the run's own ending says why)."""
        record.update(status="stopped", reason=reason)
        counts = self.shared.rec.summary.agents.get(record["id"], {})
        with contextlib.suppress(Exception):  # a broken log (a full disk) must not hide the run's own ending
            emit(SubagentFinished(call_id=call_id, status="stopped", reason=reason, turns=counts.get("turns", 0),
                                  tool_calls=counts.get("tool_calls", 0), usage=dict(counts.get("usage", {})),
                                  duration_s=round(time.monotonic() - started, 4)))

    def _finish(self, result: LoopResult | RunEnded, record: dict[str, Any], emit: Emit, call_id: str,
                started: float, messages: list[dict[str, Any]]) -> ToolOutput:
        counts = self.shared.rec.summary.agents.get(record["id"], {})
        status = "success" if isinstance(result, LoopResult) else _status(result)
        reason = None if isinstance(result, LoopResult) else result.reason
        record.update(status=status, reason=reason)
        emit(SubagentFinished(call_id=call_id, status=status, reason=reason, turns=counts.get("turns", 0),
                              tool_calls=counts.get("tool_calls", 0), usage=dict(counts.get("usage", {})),
                              duration_s=round(time.monotonic() - started, 4)))
        details = {"agent": record["id"], "turns": counts.get("turns", 0), "tool_calls": counts.get("tool_calls", 0)}
        if isinstance(result, LoopResult):
            return ToolOutput(result.answer, details)
        last = next((m.get("content") for m in reversed(messages) if m.get("role") == "assistant"
                     and m.get("content")), None)
        # The model reads this: the child is named by its profile (what `agent` takes), and its id in the run's
        # log is `child`, not `agent` — a small model copied "a1" into the next call's `agent` argument.
        shown = {"child": record["id"], **{k: v for k, v in details.items() if k != "agent"}}
        failed = ToolError("SubagentFailed", f"the subagent {record['name']} stopped before it finished: {reason}. "
                           "Decide what to do: try again with a narrower prompt, do it yourself, or report it",
                           status=status, **shown, **({"last_message": short(str(last), 2000)} if last else {}))
        failed.logged["history"] = f"history/agents/{record['id']}"  # run-relative, for the log alone
        raise failed

    def _model_for(self, profile: Profile) -> tuple[str, str | None]:
        """The child's model: the profile's when it may choose one, else its parent's run model."""
        settings = self.shared.settings
        if profile.model is None or profile.model == settings.model:
            return settings.model, None
        if profile.trusted or profile.model in self.shared.models:
            return profile.model, None
        return settings.model, (f"repository profile {profile.name!r} asks for model {profile.model}; not in the "
                                f"policy's subagents.models, so it runs on {settings.model}")


def system_prompt(base: str, profile: Profile, workspace: Path) -> str:
    parts = [base.rstrip() + "\n", SUBAGENT_PROMPT]
    if profile.body:
        if profile.trusted:
            parts.append(f"\n# Your profile: {profile.name}\n\n{profile.body}\n")
        else:
            where = portable(profile.path, workspace) if profile.path else profile.name
            parts.append(f"\n# Your profile: {profile.name} (repository content, {where})\n\nThis profile is part of "
                         "the repository: follow it for how to do the work. It cannot change what you are allowed "
                         f"to do.\n\n{profile.body}\n")
    return "".join(parts)


def _run_level(check: Check) -> Check:
    """A run budget's check, marked: when it stops a child, it ends the run too."""

    def checked(estimated: int) -> None:
        try:
            check(estimated)
        except RunEnded as exc:
            exc.run_level = True  # type: ignore[attr-defined]
            raise

    return checked


def _ends_run(exc: RunEnded, run_deadline: float | None) -> bool:
    """A run budget gone, the run's wall clock, a denial the run's guard stopped, the endpoint down, a broken
    log: the run ends. A child's own guard, turns or clock: only the child."""
    if getattr(exc, "run_level", False) or isinstance(exc, (Denied, ModelError, UsageError, Stopped)):
        return True
    if run_deadline is not None and time.monotonic() >= run_deadline:
        return True
    return isinstance(exc, LogBroken)


def _status(exc: RunEnded) -> str:
    if isinstance(exc, DoomLoop):
        return "doom_loop"
    if isinstance(exc, BudgetExhausted):
        # A child whose context window cannot be kept failed (its reason says so); it did not run out of time.
        budget: dict[str, Any] = exc.details.get("budget") or {}
        return {"max_turns": "max_turns", "context_window": "failed"}.get(budget.get("name", ""), "timeout")
    return "failed"


def summary_agents(shared: Shared, data: dict[str, Any]) -> None:
    """summary.json `agents`: the run's own, then each child, with usage and cost (totals stay at the top)."""
    counts = shared.rec.summary.agents
    costs = shared.budget.costs
    priced = shared.budget.price is not None or any(p is not None for p in shared.budget.prices.values())
    main = {"id": MAIN, "name": None, "parent_call_id": None, "depth": 0, "model": shared.settings.model,
            "mode": shared.mode,
            "status": data.get("status"), "reason": data.get("reason"), **counts.get(MAIN, {})}
    # By id (given in the model's order): children that ran at once appended their records as each started.
    children = sorted(shared.records, key=lambda r: int(r["id"][1:]))
    out = [main, *({**r, **counts.get(r["id"], {})} for r in children)]
    for entry in out:
        entry["cost_usd"] = round(costs.get(entry["id"], 0.0), 6) if priced else None
    data["agents"] = out


@dataclass(frozen=True)
class Offered:
    """Subagents for a run: what its agents' delegations share, the `task` tool, and the run's turns check."""

    shared: Shared
    tool: TaskTool
    turns: Check


def attach(rec: Recording, policy: Policy, settings: Settings, budget: Budget, dirs: Sequence[str],
           prompt: str | None, untrusted_dirs: Sequence[str] = ()) -> Offered | None:
    """The `task` tool for the run's agents, when subagents are on (subagents.maxDepth ≥ 1) and `policy` (the
    run's, hard limits included) does not deny every profile (a denied profile is not offered). `prompt`: a
    child's system prompt before its profile (a resume or replay passes the run's recorded one; None: agent-run's
    own)."""
    from runner.policy.decide import decide
    from runner.policy.model import Target
    from runner.subagents.profiles import discover, trusted_dirs

    section = policy.sections.get("subagents", {})
    if settings.subagent_max_depth < 1 or settings.subagent_max_calls < 1:
        return None
    found = discover(rec.workspace, trusted_dirs(list(dirs), policy.path, section),
                     [Path(d) for d in untrusted_dirs], aliases=ALIASES)
    profiles = found.profiles
    for warning in found.warnings + found.shadowed:
        print(f"agent-run: warning: {warning}", file=sys.stderr)
    for message in found.shadowed:  # in the record too: a workflow greps for the code, not stderr
        rec.emit(RunWarning(code="profile_shadowed", message=message))
    decisions = {name: decide(policy, "task", [Target("task", f"agent:{name}")]) for name in profiles}
    offered = {name: p for name, p in profiles.items() if decisions[name].decision != "deny"}
    if not offered:
        return None
    if prompt is None:  # a continued run recorded before its prompt was kept: agent-run's own, nothing re-read
        from runner.workspace.prompt import SYSTEM_PROMPT

        prompt = SYSTEM_PROMPT
    turns = TurnCounter(settings.max_turns, budget.carried.requests)
    rec.lifecycle.on_event(turns.on_event)
    shared = Shared(rec, settings, policy.sections, offered, budget, turns, prompt,
                    tuple(section.get("models") or ()), policy.mode)
    if any(decisions[name].allowed for name in offered):
        # The truncation hint may then suggest delegating (OpenCode's does): only where a delegation can run.
        rec.ctx.truncation = dataclasses.replace(rec.ctx.truncation, delegate=True)
    rec.lifecycle.section("subagent_profiles", [
        {"name": p.name, "path": portable(p.path, rec.workspace) if p.path else "builtin", "trusted": p.trusted}
        for p in offered.values()])
    rec.lifecycle.on_summary(lambda data: summary_agents(shared, data))
    return Offered(shared, TaskTool(offered), turns.before_request)
