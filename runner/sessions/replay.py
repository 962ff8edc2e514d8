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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner import __version__
from runner.core.events import RunStarted, ToolResult, call_ref, tag
from runner.core.jsonutil import sha256_text
from runner.core.outcome import Status, UsageError
from runner.engine.call import handle_call
from runner.engine.loop import Limits, run_loop
from runner.engine.recorder import Recording, RunOutcome, early_failure, record
from runner.engine.settings import policy_layer
from runner.policy.jsonc import PolicyError
from runner.policy.limits import HARD_LIMIT
from runner.policy.load import load_policy, parse_approval, policy_from_snapshot
from runner.policy.model import Policy
from runner.record.conversation import ConversationError, rebuild, recorded_tools, system_prompt_of
from runner.record.integrity import TamperError, verify
from runner.record.mask import MARKER
from runner.record.rundir import read_events, workspace_of
from runner.workspace.instructions import without_output_schema
from runner.workspace.output_schema import recorded as recorded_schema


@dataclass
class RecordedRun:
    run_dir: Path
    events: list[dict[str, Any]]
    started: dict[str, Any]
    task: str
    policy: Policy  # the snapshot, without its hard-limit rules (they are re-added last)

    workspace: Path = Path()  # where it is replayed (runner.sessions.resume.choose_workspace)

    def denied(self) -> list[dict[str, Any]]:
        """Denied calls in order: the tool_call event plus its permission decision, and `ref`, the call as
        `--call` names it (a subagent's prefixed with its agent id: call ids repeat across conversations)."""
        calls = {call_ref(e.get("agent"), e["call_id"]): e for e in self.events if e["type"] == "tool_call"}
        refs = ((d, call_ref(d.get("agent"), d["call_id"])) for d in self.events
                if d["type"] == "permission_decision" and d["decision"] == "deny")
        return [{**calls[ref], "decision": d, "ref": ref} for d, ref in refs if ref in calls]


def load_run(run_dir: Path, expect_hash: str | None = None, policy_spec: str | None = None) -> RecordedRun:
    """The recorded run, verified first (runner/record/integrity.py): a run directory an agent could have
    rewritten is refused (exit 2). Its policy snapshot is used only when the run verifies as sealed;
    otherwise (a run killed before its summary) `policy_spec` (`--policy`) is required."""
    try:
        sealed = verify(run_dir, expect_hash)
    except FileNotFoundError as exc:
        raise UsageError(f"{run_dir} is not a complete run directory: {exc}") from None
    except TamperError as exc:
        raise UsageError(f"refusing to replay: {exc}") from None
    if sealed is None and policy_spec is None:
        raise UsageError(f"{run_dir} was never sealed (the run was killed before its summary): its policy snapshot "
                         "cannot be trusted; name the policy with --policy")
    try:
        events = read_events(run_dir / "events.jsonl")
        snapshot = json.loads((run_dir / "policy.json").read_text(encoding="utf-8"))
        task = (run_dir / "task.md").read_text(encoding="utf-8")
    except (OSError, ValueError) as exc:
        raise UsageError(f"{run_dir} is not a complete run directory: {exc}") from None
    started = next((e for e in events if e["type"] == "run_started"), None)
    if started is None:
        raise UsageError(f"{run_dir}: the run never started (no run_started event)")
    if policy_spec is not None:
        try:
            policy = load_policy(policy_spec)
        except PolicyError as exc:
            raise UsageError(str(exc)) from None
    else:
        policy = policy_from_snapshot(snapshot, str(run_dir / "policy.json"))
    policy.rules = [r for r in policy.rules if r.source not in (HARD_LIMIT, "<run outputs>")]
    return RecordedRun(run_dir, events, started, task, policy)


def _summary_of(run_dir: Path) -> dict[str, Any] | None:
    try:
        return json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def placed(run: RecordedRun, workspace: str | None, *, force: bool = False, apply: bool = False) -> RecordedRun:
    """The run with the workspace it is replayed in, checked to be in the state the run left it
    (runner/workspace/state.py) unless `force` (which still applies the run's changes when `apply` asks)."""
    from runner.sessions.resume import Source, choose_workspace
    from runner.workspace.state import WorkspaceMismatch, check

    run.workspace = choose_workspace(workspace, Source(run.run_dir, run.events, run.started, None, True))
    try:
        warning = check(run.workspace, run.run_dir, apply=apply, force=force)
    except WorkspaceMismatch as exc:
        raise UsageError(str(exc).replace("resume in", "replay in")) from None
    if warning and not force:
        print(f"agent-run: warning: {warning}", file=sys.stderr)
    return run


def select(run: RecordedRun, call_ids: list[str]) -> list[dict[str, Any]]:
    denied = run.denied()
    if not call_ids:
        return denied
    known = {d["ref"] for d in denied}
    unknown = [c for c in call_ids if c not in known]
    if unknown:
        raise UsageError(f"not a denied call of {run.run_dir.name}: {', '.join(unknown)} "
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


def replay(run_dir: Path, call_ids: list[str], *, resume: bool, cli_settings: dict[str, Any],
           verbosity: int, sandbox: str | None = None, expect_hash: str | None = None,
           policy_spec: str | None = None, workspace: str | None = None, force: bool = False,
           apply_changes: bool = False, mcp_configs: list[str] | None = None) -> RunOutcome:
    from runner.mcp.setup import mcp_servers, recorded_mcp_configs, start_mcp
    from runner.run.assemble import (
        budget_for,
        call_env,
        context_for,
        make_model,
        settings_for,
    )
    from runner.subagents.delegate import attach
    from runner.subagents.profiles import recorded_dirs

    try:
        run = placed(load_run(run_dir, expect_hash, policy_spec), workspace, force=force, apply=apply_changes)
        chosen = select(run, call_ids)
        # --continue produces the run's final answer: its --output-schema must still be checkable.
        schema = recorded_schema(run.started, workspace_of(run.run_dir) or run.workspace) if resume else None
    except UsageError as exc:
        return early_failure(exc.reason)
    except (OSError, ValueError, KeyError, TypeError) as exc:  # a run directory not as this version writes them
        return early_failure(f"cannot replay {run_dir.name}: not a run directory this version can replay "
                             f"({type(exc).__name__}: {exc})")
    if not chosen:
        return early_failure(f"{run_dir.name} has no denied calls to approve")
    masked = [c for c in chosen if MARKER in c["arguments"]]
    if masked:
        return early_failure(masked_refusal(masked, others=len(chosen) - len(masked)))

    def body(rec: Recording) -> tuple[Status, str | None]:
        approvals = [parse_approval(a, i) for i, a in enumerate(p for c in chosen
                                                                  for p in c["decision"].get("approve") or [])]
        policy = run.policy.with_rules(approvals)
        rec.summary.policy = policy.path
        rec.extra.update(replay_of=run.started["run_id"], approved_calls=[c["ref"] for c in chosen])
        lower = {**policy_layer(policy.sections), "model": run.started.get("model")}
        settings = settings_for(cli_settings, (), lower)
        rec.summary.model = settings.model
        deadline = rec.started + settings.timeout
        budget = budget_for(rec, policy, settings)
        summary = _summary_of(run.run_dir)
        given = mcp_configs or recorded_mcp_configs(summary, rec.home or run.workspace)
        servers = mcp_servers(rec, policy, given, dict(os.environ))
        env = call_env(rec, policy, settings, deadline, [], sandbox_mode=sandbox)
        start_mcp(rec, env, servers, dict(os.environ), settings)
        # The task tool (an approved `task` call runs its child; --continue goes on inside a child).
        turns = attach(rec, env, settings, policy, budget, [],
                       without_output_schema(system_prompt_of(run.run_dir, run.events) or "") or None,
                       recorded_dirs(summary, rec.home or run.workspace))
        (rec.run_dir / "task.md").write_text(run.task, encoding="utf-8")
        rec.emit(RunStarted(version=__version__, model=settings.model, policy=policy.path, mode=policy.mode,
                            workspace=str(run.workspace), task_sha256=sha256_text(run.task),
                            max_turns=settings.max_turns, timeout_s=settings.timeout,
                            replay_of=run.started["run_id"], approved_calls=[c["ref"] for c in chosen],
                            sandbox=rec.ctx.sandbox.describe()))
        outcomes: list[dict[str, Any]] = []
        rec.consumers.append(lambda e: outcomes.append({
            "call_id": call_ref(e.agent, e.call_id), "tool": e.tool, "ok": e.ok, "error_type": e.error_type,
            "bytes": e.bytes, "sha256": e.sha256}) if isinstance(e, ToolResult) else None)
        results: dict[str | None, dict[str, str]] = {}
        for c in chosen:
            # What runs is shown before it runs: the human approves this, not a summary of it.
            print(f"agent-run replay: running {c['ref']}: {describe_call(c)}", file=sys.stderr, flush=True)
            call = {"id": c["call_id"], "type": "function",
                    "function": {"name": c["tool"], "arguments": c["arguments"]}}
            agent = c.get("agent")
            emit = (lambda e, agent=agent: rec.emit(tag(e, agent))) if agent else rec.emit  # the child's, as logged
            results.setdefault(agent["id"] if agent else None, {})[c["call_id"]] = handle_call(
                call, dataclasses.replace(env, agent=agent) if agent else env, c["turn"], emit)
        rec.extra["approved_results"] = list(outcomes)
        if not resume:
            failed = [r for r in outcomes if not r["ok"]]
            if rec.summary.denials:
                return rec.finished_status()
            if failed:
                return Status.FAILED, f"{len(failed)} approved call(s) failed: " + ", ".join(
                    f"{r['call_id']} {r['error_type']}" for r in failed)
            return Status.SUCCESS, None
        from runner.subagents.replay import continue_children

        try:
            own, upto = continue_children(run.run_dir, run.events, chosen, results, env)
            conversation = rebuild(run.run_dir, run.events, upto, own)
            tools = recorded_tools(run.run_dir)
        except ConversationError as exc:
            return Status.USAGE_ERROR, f"cannot continue {run.run_dir.name}: {exc}"
        except UsageError as exc:
            return Status.USAGE_ERROR, exc.reason
        from runner.sessions.resume import note_cache_break

        note_cache_break(rec, conversation)
        model = make_model(settings, deadline)
        limits = Limits(settings.max_turns, deadline, settings.timeout,
                        (budget.before_request,) + ((turns,) if turns else ()), (budget.on_reply,))
        context = context_for(rec, policy, settings, model, env)
        result = run_loop(conversation.messages, model, env, limits, rec.emit, conversation.last_turn + 1,
                          context=context, tools=tools, previous=conversation.last_prompt,
                          snapshot=context.snapshot, check_answer=schema.check if schema else None)
        if schema is not None:
            schema.keep(rec)
        rec.answer = result.answer
        return rec.finished_status()

    return record(run.workspace, run_dir.parent, verbosity, body, continues=run.run_dir,
                  home=workspace_of(run.run_dir) or run.workspace)
