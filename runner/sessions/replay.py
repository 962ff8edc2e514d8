"""`agent-run replay RUN_DIR --approve`: turn a CI denial into an approval in one step.

The denied calls of a finished run are executed exactly as the model asked, in
the same workspace, under that run's policy snapshot with just those calls
approved (the hard limits still last). A new run directory records the original
run id, the approved calls and their results. With `resume`, the conversation
then continues with the model from the turn of the last approved call, the
approved results in place of the denials.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runner.core.events import RunWarning, ToolResult, call_ref, tag
from runner.core.frames import carried
from runner.core.outcome import Status, UsageError
from runner.core.shown import utf8_problem
from runner.engine.build import Agent
from runner.engine.call import handle_call
from runner.engine.recorder import (
    Held,
    Recording,
    RunOutcome,
    Where,
    early_failure,
    hold_continued,
    hold_workspace,
    record,
)
from runner.policy.load import parse_approval
from runner.policy.model import Policy
from runner.record.conversation import ConversationError, rebuild, recorded_tools, system_prompt_of
from runner.record.mask import MARKER
from runner.run.assemble import Given, Prepared, drive, finish, prepare
from runner.run.check import run_check
from runner.run.options import RunOptions
from runner.run.review_only import keep_review_only
from runner.run.task import Task, parse_task
from runner.sessions.inputs import check_served, recorded_profile_dirs, restored_mcp_configs, restored_skills
from runner.sessions.load import (
    Recorded,
    checked_workspace,
    choose_workspace,
    load_recorded,
    note_cache_break,
    note_torn_tail,
    recorded_policy,
    recorded_settings,
)
from runner.sessions.resume import received_tool_calls
from runner.subagents.replay import continue_children
from runner.workspace.instructions import without_output_schema
from runner.workspace.output_schema import OutputSchema
from runner.workspace.output_schema import recorded as recorded_schema
from runner.workspace.trust import load_env_files


@dataclass
class Replayed:
    """A recorded run and the policy its denied calls are replayed under (the snapshot, without its hard
    limits: they are re-added last)."""

    run: Recorded
    policy: Policy

    def denied(self) -> list[dict[str, Any]]:
        """Denied calls in order: the tool_call event plus its permission decision, and `ref`, the call as
        `--call` names it (a subagent's prefixed with its agent id: call ids repeat across conversations)."""
        events = self.run.events
        calls = {call_ref(e.get("agent"), e["call_id"]): e for e in events if e["type"] == "tool_call"}
        # The task's check is the runner's call (check_started, no tool_call): replayed as the check it is.
        calls.update({e["call_id"]: {"call_id": e["call_id"], "tool": "bash", "turn": 0, "check": e["command"],
                                     "arguments": json.dumps({"command": e["command"]})}
                      for e in events if e["type"] == "check_started" and not e.get("agent")})
        refs = ((d, call_ref(d.get("agent"), d["call_id"])) for d in events
                if d["type"] == "permission_decision" and d["decision"] == "deny")
        return [{**calls[ref], "decision": d, "ref": ref} for d, ref in refs if ref in calls]


def load_run(run_dir: Path, expect_hash: str | None = None, policy_spec: str | None = None,
             allow_unkeyed: bool = False) -> Replayed:
    """The recorded run (runner/sessions/load.py), and its policy snapshot, used only when the run verifies
    as sealed; otherwise (a run killed before its summary) `policy_spec` (`--policy`) is required."""
    run = load_recorded(run_dir, "replay", expect_hash, allow_unkeyed)
    policy = recorded_policy(run, policy_spec, run.home or Path.cwd(), keep_approvals=True, sealed_only=True,
                             warn=False)
    return Replayed(run, policy)


def select(replayed: Replayed, call_ids: list[str]) -> list[dict[str, Any]]:
    denied = replayed.denied()
    if not call_ids:
        return denied
    known = {d["ref"] for d in denied}
    unknown = [c for c in call_ids if c not in known]
    if unknown:
        raise UsageError(f"not a denied call of {replayed.run.run_dir.name}: {', '.join(unknown)} "
                         f"(denied: {', '.join(sorted(known)) or 'none'})")
    return [d for d in denied if d["ref"] in call_ids]


def describe_call(call: dict[str, Any]) -> str:
    """The exact thing a call does, as a person reads it: a bash call's command line, else tool + arguments."""
    try:
        args = json.loads(call["arguments"])
    except (json.JSONDecodeError, TypeError):
        args = None
    if call["tool"] == "bash" and isinstance(args, dict) and isinstance(args.get("command"), str):
        return f"bash: {args['command']}"
    return f"{call['tool']} {call['arguments']}"


def masked_refusal(masked: list[dict[str, Any]], others: int) -> str:
    """Why calls whose recorded arguments hold `[REDACTED:kind]` cannot be replayed: the log masked a secret
    the model sent, so the exact call is not on record, and running the masked text is not what was denied."""
    ids = ", ".join(c["ref"] for c in masked)
    kinds = sorted({k for c in masked for k in (c.get("redacted") or {}).get("kinds") or []}) or ["…"]
    what = " (" + ", ".join(f"{MARKER}{k}]" for k in kinds) + ")"
    rest = f"; replay the other {others} with --call" if others else ""
    return (f"cannot replay {ids}: its recorded arguments hold a masked secret{what}, so the exact call is not on "
            f"record; rerun the task with --approve instead{rest}")


@dataclass(frozen=True)
class ReplayRequest:
    """`agent-run replay RUN --approve`: the recorded run, the denied calls to run (their ids; none: every one),
    and what the command line says of how (runner/cli/replay.py)."""

    run_dir: Path
    call_ids: list[str]
    resume: bool  # --continue
    cli_settings: dict[str, Any]
    verbosity: int
    sandbox: str | None = None
    expect_hash: str | None = None
    policy_spec: str | None = None
    workspace: str | None = None
    force: bool = False
    apply_changes: bool = False
    mcp_configs: list[str] = field(default_factory=list)
    allow_unkeyed: bool = False
    stream_events: bool = False
    skip_hooks: bool = False  # the approved calls run without the policy's PreToolUse and PostToolUse hooks


def replay(req: ReplayRequest) -> RunOutcome:
    run_dir, resume, verbosity, stream_events = req.run_dir, req.resume, req.verbosity, req.stream_events
    # The locks first — the replayed run's, then the workspace's — and only then the workspace check and
    # --apply-changes: a replay beside a resume of the same run, or beside a run in the workspace, is refused
    # before it can change or vouch for anything (as runner/sessions/resume.py does).
    held = Held()
    try:
        try:
            hold_continued(held, run_dir)
            replayed = load_run(run_dir, req.expect_hash, req.policy_spec, req.allow_unkeyed)
            run = replayed.run
            chosen_workspace = choose_workspace(req.workspace, run)
            for label, path in (("workspace", chosen_workspace), ("runs directory", run_dir.parent)):
                if (problem := utf8_problem(label, path)) is not None:  # the new run could not record it
                    raise UsageError(problem)
            hold_workspace(held, chosen_workspace, run_dir.parent)
            place = checked_workspace(run, req.workspace, "replay", force=req.force, apply=req.apply_changes)
            chosen = select(replayed, req.call_ids)
            # --continue produces the run's final answer: its --output-schema must still be checkable.
            schema = recorded_schema(run.started, run.home or place) if resume else None
            # The servers the run had (checked by sha256), unless others are given now.
            mcp_configs = list(req.mcp_configs) or restored_mcp_configs(run, run.home or place)
        except UsageError as exc:
            return early_failure(exc.reason)
        except (OSError, ValueError, KeyError, TypeError) as exc:  # a run directory not as this version writes them
            return early_failure(f"cannot replay {run_dir.name}: not a run directory this version can replay "
                                 f"({type(exc).__name__}: {exc})")
        if not chosen or any(MARKER in c["arguments"] for c in chosen):
            masked = [c for c in chosen if MARKER in c["arguments"]]
            return early_failure(masked_refusal(masked, others=len(chosen) - len(masked)) if masked
                                 else f"{run_dir.name} has no denied calls to approve")
        opts = RunOptions(task=str(run.run_dir / "task.md"), workspace=str(place), sandbox=req.sandbox,
                          cli_settings=req.cli_settings, verbosity=verbosity, mcp_configs=list(mcp_configs or []),
                          stream_events=stream_events)
        try:
            keep_review_only(opts, run.started, os.environ)  # a --fork-review run's replay reads the checkout alone
        except UsageError as exc:
            return early_failure(exc.reason)

        def body(rec: Recording) -> tuple[Status, str | None]:
            return _replay(rec, replayed, chosen, opts, resume, schema, req.skip_hooks)

        return record(Where(place, run_dir.parent, home=run.home or place, continues=run.run_dir), body,
                      verbosity=verbosity, stream_events=stream_events, held=held)
    finally:
        held.release()  # a no-op once record() has released them


def _replay(rec: Recording, replayed: Replayed, chosen: list[dict[str, Any]], opts: RunOptions, resume: bool,
            schema: OutputSchema | None, skip_hooks: bool = False) -> tuple[Status, str | None]:
    """The replay as a run: prepared like any (runner/run/assemble.py), the approved calls executed as
    recorded, then finished — or, with --continue, the conversation driven on from them."""
    run = replayed.run
    approved = [p for c in chosen for p in c["decision"].get("approve") or []]
    approvals = [parse_approval(a, i, scope="call") for i, a in enumerate(approved)]
    policy = replayed.policy.with_rules(approvals)
    refs = [c["ref"] for c in chosen]
    rec.lifecycle.section("replay_of", run.started["run_id"])
    rec.lifecycle.section("approved_calls", refs)
    (rec.run_dir / "task.md").write_text(run.task, encoding="utf-8")
    task = parse_task(run.task, str(run.run_dir / "task.md"), "task")
    sent = run.started.get("result_frames")
    try:
        tools = recorded_tools(run.run_dir) if resume else None
        # The results as the run recorded them: an approved call's, read now, is framed with this run's own nonce.
        frames = carried(sent, rebuild(run.run_dir, run.events).messages) if resume and sent else {}
    except ConversationError as exc:
        return Status.USAGE_ERROR, f"cannot continue {run.run_dir.name}: {exc}"
    skills = restored_skills(tools, run.started, rec.workspace, [])  # --continue: the recorded `skill` tool served
    settings = recorded_settings(run, policy, opts.cli_settings, ())
    # The task tool: an approved `task` call runs its child; --continue goes on inside a child.
    given = Given(tools=tools, skills=skills,
                  child_prompt=without_output_schema(system_prompt_of(run.run_dir, run.events) or "") or None,
                  profile_dirs=recorded_profile_dirs(run.started, run.summary, rec.home or rec.workspace), rerun=[],
                  needs_model=resume, structured=resume and received_tool_calls(run), frames=frames,
                  started={"replay_of": run.started["run_id"], "approved_calls": refs,
                           "torn_tail_bytes": run.torn_tail_bytes})
    prepared = prepare(rec, opts, load_env_files([]), task, policy, settings, run.run_dir / "task.md", given)
    note_torn_tail(rec, run)
    if resume:  # the conversation goes on with the recorded tools: each must be served
        served = rec.lifecycle.declared("mcp") or {}
        check_served(tools, prepared.agent.env.registry, run.started, served, "continue it")
    # An approved check runs as the check, after the calls (as in the run); with --continue, `finish` runs it.
    checks = [c["check"] for c in chosen if "check" in c]
    chosen = [c for c in chosen if "check" not in c]
    outcomes, results = _execute(rec, prepared.agent, chosen, skip_hooks)
    if not resume or not chosen:
        failed = [r for r in outcomes if not r["ok"]]
        if failed and not rec.summary.denials:
            return Status.FAILED, f"{len(failed)} approved call(s) failed: " + ", ".join(
                f"{r['call_id']} {r['error_type']}" for r in failed)
        if checks:
            print(f"agent-run replay: running the check: {checks[0]}", file=sys.stderr, flush=True)
            prepared.changes.take()
            checked, _ = run_check(checks[0], prepared.agent.env, rec)
            if checked is not None:
                return checked
        return finish(rec, task, prepared, None)
    return _continue(rec, run, task, prepared, chosen, results, schema)


def _execute(rec: Recording, agent: Agent, chosen: list[dict[str, Any]], skip_hooks: bool = False,
             ) -> tuple[list[dict[str, Any]], dict[str | None, dict[str, str]]]:
    """Each approved call exactly as the model asked (a subagent's in its own conversation's env), through the
    policy's hooks again unless `skip_hooks` (recorded: a warning hooks_skipped): the outcomes for summary.json,
    and the results by agent and call id for a --continue."""
    base = agent.env
    if skip_hooks and base.hooks is not None:
        base = dataclasses.replace(base, hooks=None)
        rec.emit(RunWarning(code="hooks_skipped", message="replay --skip-hooks: the approved calls ran without the "
                            "policy's PreToolUse and PostToolUse hooks"))
    outcomes: list[dict[str, Any]] = []
    rec.lifecycle.on_event(lambda e: outcomes.append({
        "call_id": call_ref(e.agent, e.call_id), "tool": e.tool, "ok": e.ok, "error_type": e.error_type,
        "bytes": e.bytes, "sha256": e.sha256}) if isinstance(e, ToolResult) else None)
    results: dict[str | None, dict[str, str]] = {}
    for c in chosen:
        # What runs is shown before it runs: the human approves this, not a summary of it.
        print(f"agent-run replay: running {c['ref']}: {describe_call(c)}", file=sys.stderr, flush=True)
        call = {"id": c["call_id"], "type": "function", "function": {"name": c["tool"], "arguments": c["arguments"]}}
        agent_of = c.get("agent")
        emit = (lambda e, agent_of=agent_of: rec.emit(tag(e, agent_of))) if agent_of else rec.emit  # as logged
        env = dataclasses.replace(base, agent=agent_of) if agent_of else base
        results.setdefault(agent_of["id"] if agent_of else None, {})[c["call_id"]] = handle_call(
            call, env, c["turn"], emit)
    rec.lifecycle.section("approved_results", list(outcomes))
    return outcomes, results


def _continue(rec: Recording, run: Recorded, task: Task, prepared: Prepared, chosen: list[dict[str, Any]],
              results: dict[str | None, dict[str, str]], schema: OutputSchema | None) -> tuple[Status, str | None]:
    """--continue: the conversation from the turn of the last approved call, the approved results in
    place of the denials (a subagent's call: its child goes on first, runner/subagents/replay.py)."""
    try:
        own, upto = continue_children(run.run_dir, run.events, chosen, results, prepared.agent)
        conversation = rebuild(run.run_dir, run.events, upto, own)
    except ConversationError as exc:
        return Status.USAGE_ERROR, f"cannot continue {run.run_dir.name}: {exc}"
    except UsageError as exc:
        return Status.USAGE_ERROR, exc.reason
    note_cache_break(rec, conversation)
    return drive(rec, task, prepared, conversation.messages, turn=conversation.last_turn + 1,
                 previous=conversation.last_prompt, schema=schema)
