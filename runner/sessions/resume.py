"""`agent-run resume` and `agent-run fork`: a recorded run's conversation, continued in a new run.

The new run starts from the old run's conversation exactly as it was sent (runner/record/conversation.py),
with the old run's recorded `tools` array, so its first request extends the old run's last one
byte for byte and the provider's prompt cache holds. Then one user message says why the old run
stopped (which loop, which budget, which denials; a fork: from which turn) and, if given, the
person's MESSAGE. Budgets are fresh; the policy is the one given now, by default the old run's own
snapshot (checked: sealed, or matching the hash its `run_started` recorded; a killed run without a key
only when it is the job's own policy, runner/sessions/vouch.py). The workspace must be in the state the
run left it (runner/workspace/state.py). The old run (and the workspace) are locked first, before the
workspace is checked or changed, while it is continued; the old run is never rewritten: only its
append-only `continuations.jsonl` names the runs that continued it.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runner.core.events import UserMessage
from runner.core.frames import carried
from runner.core.jsonutil import canonical
from runner.core.outcome import Status, UsageError
from runner.core.shown import utf8_problem
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
from runner.guards.budget import Spent
from runner.model import warm
from runner.policy.model import Policy
from runner.record.conversation import Conversation, ConversationError, rebuild, recorded_tools, system_text
from runner.record.jsonl import iter_events
from runner.record.rundir import portable, runs_dir_for
from runner.run.assemble import Given, drive, prepare
from runner.run.land import keep_recorded
from runner.run.options import RunOptions
from runner.run.review_only import keep_review_only
from runner.run.secrets import learn_files, learn_secrets
from runner.run.task import parse_task
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
from runner.sessions.vouch import trusted_snapshot
from runner.workspace.instructions import without_output_schema
from runner.workspace.output_schema import OutputSchema
from runner.workspace.output_schema import recorded as recorded_schema
from runner.workspace.trust import load_env_files

CONTINUATIONS = "continuations.jsonl"
RUN_ID = re.compile(r"[0-9]{8}T[0-9]{12}Z-[0-9a-f]{6}")


@dataclass
class ContinueOptions:
    run: RunOptions  # the run options given now (`task` unused)
    source: str | None  # RUN_DIR; None with `last`
    kind: str = "resume"  # resume | fork
    last: bool = False
    message: str | None = None  # "-": read from stdin
    at: int | None = None  # fork: keep turns 1..at
    force: bool = False
    apply_changes: bool = False
    allow_unkeyed: bool = False  # accept a run the audit key given now cannot vouch for
    chain: tuple[str, ...] = ()  # --auto-resume (runner/sessions/auto_resume.py): the runs before this one
    chain_of: int = 0  # … and the N it was given
    spent: Spent = field(default_factory=Spent)  # … and what they spent of the first run's budgets
    compact: bool = False  # resume --compact: a summary before the first request


def execute_continue(opts: ContinueOptions) -> RunOutcome:
    if (opts.run.instructions or opts.run.append_system_prompt or opts.run.system_prompt  # shared, never applied
            or opts.run.cli_settings.get("no_project_instructions")):
        return early_failure(f"{opts.kind} sends the recorded system prompt: --system-prompt, --instructions, "
                             "--append-system-prompt and --no-project-instructions apply to a new run only")
    held = Held()
    try:
        return _locked(opts, held)
    finally:
        held.release()  # a no-op once record() has released them


def _locked(opts: ContinueOptions, held: Held) -> RunOutcome:
    """The locks first — the continued run's (always), then the workspace's (unless --shared-workspace) — and
    only then the workspace check and --apply-changes: a second resume of the same run, or a run already in
    the workspace, is refused before it can change or vouch for anything."""
    if not str(opts.run.cli_settings.get("model", "")).startswith("replay:"):
        warm.start()  # the openai SDK's import beside the log's verification and the workspace check (model/warm.py)
    try:
        located = locate(opts)
        hold_continued(held, located)
        source = load_recorded(located, "continue it", allow_unkeyed=opts.allow_unkeyed)
        keep_recorded(opts.run, source.summary, opts.kind)  # --land: as the run did, or exit 2
        keep_review_only(opts.run, source.started, os.environ)  # a --fork-review run's stay review-only
        message = read_message(opts.message)
        if opts.kind == "fork" and opts.at is not None:
            done = max((e["turn"] for e in source.own_events if e.get("type") == "model_response"), default=0)
            if not 1 <= opts.at <= done:
                raise UsageError(f"--at {opts.at}: {source.run_dir.name} has turns 1..{done}")
        conversation = rebuild(source.run_dir, source.events, opts.at)
        tools = recorded_tools(source.run_dir)
        runs_dir = (Path(opts.run.runs_dir).expanduser().resolve() if opts.run.runs_dir else source.run_dir.parent)
        chosen = choose_workspace(opts.run.workspace, source)
        for label, path in (("workspace", chosen), ("runs directory", runs_dir)):
            if (problem := utf8_problem(label, path)) is not None:  # the new run could not record it
                raise UsageError(problem)
        if not opts.run.shared_workspace:
            hold_workspace(held, chosen, runs_dir)
        trusted_snapshot(source, opts.run.policy, chosen, opts.run.mode)  # before anything is changed
        workspace = checked_workspace(source, opts.run.workspace, "resume", force=opts.force,
                                      apply=opts.apply_changes, earlier=lineage(source)[1:])
        policy = recorded_policy(source, opts.run.policy, workspace, approvals=opts.run.approvals,
                                 mode=opts.run.mode)
        schema = recorded_schema(source.started, source.home or workspace)
        # The servers the run had (checked by sha256), unless others are given now.
        opts.run.mcp_configs = opts.run.mcp_configs or restored_mcp_configs(source, source.home or workspace)
        # The recorded index is in the prompt; its calls are served by the skills found now, if the same.
        skills = restored_skills(tools, source.started, workspace, opts.run.skills)
    except (UsageError, ConversationError) as exc:
        reason = exc.reason if isinstance(exc, UsageError) else str(exc)
        return early_failure(f"cannot {opts.kind} {opts.source or 'the last run'}: {reason}")
    except (OSError, ValueError, KeyError, TypeError) as exc:  # a run directory not as this version writes them
        return early_failure(f"cannot {opts.kind} {opts.source or 'the last run'}: not a run directory this "
                             f"version can continue ({type(exc).__name__}: {exc})")
    home = source.home or workspace

    loaded = Loaded(source, conversation, tools, policy, message, home, schema, skills)

    def body(rec: Recording) -> tuple[Status, str | None]:
        return _continue(opts, rec, loaded)

    return record(Where(workspace, runs_dir, home=home, continues=source.run_dir,
                        shared_workspace=opts.run.shared_workspace), body,
                  verbosity=opts.run.verbosity, stream_events=opts.run.stream_events, held=held)


@dataclass(frozen=True)
class Loaded:
    """The recorded run a resume or fork continues, read and checked: its conversation (cut at `--at` for a fork),
    the tools it was sent, the policy it goes on under, the message that continues it, where its commands are run
    from, its output schema and the skills that serve its recorded `skill` tool."""

    source: Recorded
    conversation: Conversation
    tools: list[dict[str, Any]] | None
    policy: Policy
    message: str | None
    home: Path
    schema: OutputSchema | None
    skills: list[Any] | None


def _continue(opts: ContinueOptions, rec: Recording, loaded: Loaded) -> tuple[Status, str | None]:
    source, conversation, tools, policy = loaded.source, loaded.conversation, loaded.tools, loaded.policy
    message, home, schema, skills = loaded.message, loaded.home, loaded.schema, loaded.skills
    (rec.run_dir / "task.md").write_text(source.task, encoding="utf-8")
    task = parse_task(source.task, str(source.run_dir / "task.md"), "task")
    origin = {"run_id": source.started["run_id"], "run_dir": portable(source.run_dir, home),
              "kind": "auto" if opts.chain else opts.kind,
              "at_turn": conversation.last_turn, "status": source.status}
    rec.lifecycle.sections({"title": (source.summary or {}).get("title") or task.title, "resumed_from": origin,
                            "task_file": (source.summary or {}).get("task_file") or "-"})
    if opts.chain:
        rec.lifecycle.section("auto_resume", {"chain": [*opts.chain, rec.run_id], "of": opts.chain_of})
    files = learn_files(rec, load_env_files(opts.run.env_files))
    servers = learn_secrets(rec, opts.run, files, policy)  # before the settings: their errors name values
    settings = recorded_settings(source, policy, opts.run.cli_settings, files.paths)
    given = Given(tools=tools, readable=lineage(source), skills=skills,
                  child_prompt=without_output_schema(system_text(conversation.messages) or "") or None,
                  profile_dirs=recorded_profile_dirs(source.started, source.summary, home),
                  structured=received_tool_calls(source),
                  frames=carried(source.started.get("result_frames"), conversation.messages),
                  started={"resumed_from": origin, "torn_tail_bytes": source.torn_tail_bytes}, spent=opts.spent,
                  servers=servers)
    run = prepare(rec, opts.run, files, task, policy, settings, source.run_dir / "task.md", given)
    note_torn_tail(rec, source)
    check_served(tools, run.agent.env.registry, source.started, rec.lifecycle.declared("mcp") or {}, opts.kind)
    _append_continuation(source.run_dir, rec, origin)
    for tool in run.agent.env.registry.tools:  # what a tool keeps (the plan) goes on with the conversation
        tool.restore(run.agent.state, source.own_events, conversation.last_turn)
    turn = conversation.last_turn + 1
    note = stop_note(source, "auto" if opts.chain else opts.kind, conversation, message)
    rec.emit(UserMessage(turn=turn, reason=opts.kind, content=note))
    note_cache_break(rec, conversation)
    messages = [*conversation.messages, {"role": "user", "content": note}]
    if opts.compact:
        run.agent.context.request_summary()
    # A chain's turns are numbered on from its first run's turn 1: its --max-turns ends at that turn, as one run's.
    last = settings.max_turns if opts.chain else None
    return drive(rec, task, run, messages, turn=turn, previous=conversation.last_prompt, schema=schema, last=last)


def locate(opts: ContinueOptions) -> Path:
    if opts.last:
        workspace = Path(opts.run.workspace or os.getcwd()).expanduser().resolve()
        runs = runs_dir_for(opts.run.runs_dir, workspace)
        found = sorted((p for p in runs.glob("*/events.jsonl")), key=lambda p: p.parent.name)
        if not found:
            raise UsageError(f"--last: no runs in {runs}")
        return found[-1].parent
    if not opts.source:
        raise UsageError("name the run directory to continue, or pass --last")
    path = Path(opts.source).expanduser()
    if not path.is_dir() and opts.run.workspace:
        path = Path(opts.run.workspace).expanduser() / opts.source
    if not (path / "events.jsonl").is_file():
        raise UsageError(f"{opts.source} is not a run directory (no events.jsonl)")
    return path.resolve()


def read_message(message: str | None) -> str | None:
    if message != "-":
        return message
    try:
        return sys.stdin.buffer.read().decode("utf-8").strip() or None
    except UnicodeDecodeError as exc:
        raise UsageError(f"the message on stdin is not UTF-8 text (byte {exc.start})") from None


def lineage(source: Recorded) -> tuple[Path, ...]:
    """The run and the runs it continued (their spill files are named in the conversation)."""
    out, started, seen = [source.run_dir], source.started, {source.run_dir}
    while isinstance(started.get("resumed_from"), dict):
        run_id = str(started["resumed_from"].get("run_id"))
        parent = source.run_dir.parent / run_id
        # A sibling run directory by its id, nothing else: the id comes from a log, not from the person.
        if not RUN_ID.fullmatch(run_id) or parent in seen or not (parent / "events.jsonl").is_file():
            break
        seen.add(parent)
        out.append(parent)
        started = next((e for e in iter_events(parent / "events.jsonl") if e.get("type") == "run_started"), {})
    return tuple(out)


def received_tool_calls(source: Recorded) -> bool:
    """Whether the run, or a run it continues, received a reply with structured `tool_calls` (any agent's): its
    model makes calls in that field, so a continued conversation's text is never read as one (`--text-tool-calls
    auto`). The whole record counts, a fork's turns after `--at` too: they say what the model does."""
    def structured(events: Iterable[dict[str, Any]]) -> bool:
        return any(e.get("type") == "model_response" and isinstance(e.get("message"), dict)
                   and bool(e["message"].get("tool_calls")) for e in events)

    return structured(source.events) or any(structured(iter_events(run / "events.jsonl"))
                                            for run in lineage(source)[1:])


def _append_continuation(run_dir: Path, rec: Recording, origin: dict[str, Any]) -> None:
    """One line in the old run's continuations.jsonl; the old run's sealed files are never touched."""
    line = canonical({"run_id": rec.run_id, "run_dir": portable(rec.run_dir, rec.home or rec.workspace),
                      "kind": origin["kind"], "at_turn": origin["at_turn"],
                      "ts": dt.datetime.now(dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")})
    try:
        # Appended, never through a symlink the directory might hold (it is the old run's, maybe unpacked).
        fd = os.open(run_dir / CONTINUATIONS, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o644)
        try:
            os.write(fd, (line + "\n").encode("utf-8"))
        finally:
            os.close(fd)
    except OSError as exc:  # a read-only artifact: the new run still names its origin
        print(f"agent-run: warning: cannot record the continuation in {run_dir}: {exc.strerror or exc}",
              file=sys.stderr)


def stop_note(source: Recorded, kind: str, conversation: Conversation, message: str | None) -> str:
    """The user message that opens the continuation (`kind`: resume, fork, or auto: an auto-resume chain's): why the
    run stopped, then the person's message."""
    summary = source.summary or {}
    reason = summary.get("reason") or ""
    turn = conversation.last_turn
    if kind == "fork":
        head = (f"[agent-run: this conversation was forked from run {source.started['run_id']} after turn {turn}; "
                "it goes on from here in a new run.]")
    elif source.status == "killed":
        head = (f"[agent-run: the run was killed after turn {turn} and left no summary. It is resumed now; check "
                "the state of what you were doing before you go on.]")
    elif source.status == "doom_loop":
        loop = summary.get("loop") or {}
        which = f" ({loop.get('detector')}, {loop.get('tool') or 'calls'})" if loop.get("detector") else ""
        head = (f"[agent-run: the run was stopped by a loop guard{which}: {reason}. It is resumed now; do not repeat "
                "those calls: try a different approach.]")
    elif source.status == "denied":
        denied = "; ".join(str(d.get("target") or d.get("tool")) for d in (summary.get("denials") or [])[:5])
        head = (f"[agent-run: the run ended with calls the policy denied ({denied}). It is resumed now under the "
                "policy given for this run; a denied call is still denied unless it was approved.]")
    elif source.status == "success":
        head = "[agent-run: the run had finished. It is resumed now with a follow-up.]"
    else:
        budgets = "within what is left of its budgets" if kind == "auto" else "with fresh budgets"  # a chain's: shared
        head = f"[agent-run: the run stopped ({source.status}: {reason}). It is resumed now {budgets}.]"
    if conversation.unanswered:
        head += f" [{len(conversation.unanswered)} call(s) of turn {turn} were not executed before it stopped.]"
    return f"{head}\n\n{message}" if message else head
