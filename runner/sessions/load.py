"""A recorded run read back once, for every command that continues one (`resume`, `fork`, `replay`).

The run directory is verified first (runner/record/integrity.py): a sealed run must verify whole, a
killed one's log must chain up to its last whole line; a directory an agent could have rewritten is refused
(exit 2). A killed run's torn last line (a kill mid-write) is left out: the continuation goes on from the
last whole line, records the bytes left out (`run_started.torn_tail_bytes`) and says so (`note_torn_tail`).
Its policy snapshot is trusted only when it verifies (sealed, or equal to the hash its `run_started`
recorded); otherwise the person names the policy with `--policy`. What the new run does
with it is assembled by runner/run/assemble.py like any other run.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner.core.events import RunWarning
from runner.core.jsonutil import file_sha256
from runner.core.outcome import UsageError
from runner.engine.recorder import Recording
from runner.engine.settings import Settings, policy_layer
from runner.policy.jsonc import PolicyError
from runner.policy.limits import HARD_LIMIT
from runner.policy.load import load_policy, parse_approval, policy_from_snapshot, resolve_policy_path
from runner.policy.model import Policy
from runner.record.conversation import Conversation
from runner.record.integrity import TamperError, audit_key, verify
from runner.record.jsonl import iter_events, whole_length
from runner.record.rundir import portable, workspace_of
from runner.run.assemble import OWN_OUTPUTS, settings_for
from runner.workspace.state import WorkspaceMismatch, check


@dataclass
class Recorded:
    run_dir: Path
    events: list[dict[str, Any]]  # every agent's, in order
    started: dict[str, Any]  # the run's run_started event
    summary: dict[str, Any] | None  # None: killed before its summary
    sealed: bool
    task: str  # task.md as the run wrote it
    torn_tail_bytes: int | None = None  # a killed run's torn last line, left out (None: the log ended whole)

    @property
    def status(self) -> str:
        return str(self.summary.get("status")) if self.summary else "killed"

    @property
    def own_events(self) -> list[dict[str, Any]]:
        """The run's own agent's: a subagent's conversation ended with its answer, which is in the parent's."""
        return [e for e in self.events if e.get("agent") is None]

    @property
    def home(self) -> Path | None:
        """The workspace the run directory sits in (WORKSPACE/.agent-run/runs/ID), if it does."""
        return workspace_of(self.run_dir)


def load_recorded(run_dir: Path, verb: str, expect_hash: str | None = None, allow_unkeyed: bool = False) -> Recorded:
    """The run at `run_dir`, verified; `verb` names what refuses it (`replay`, `continue it`). With
    AGENT_RUN_AUDIT_KEY set, a run not keyed under that key is refused unless `allow_unkeyed`."""
    _regular_files(run_dir)
    try:
        sealed = verify(run_dir, expect_hash, audit_key(os.environ), allow_unkeyed,
                        lambda why: print(f"agent-run: warning: {why}", file=sys.stderr))
    except FileNotFoundError as exc:
        raise UsageError(f"{run_dir} is not a complete run directory: {exc}") from None
    except TamperError as exc:
        raise UsageError(f"refusing to {verb}: {exc}") from None
    whole, torn = whole_length(run_dir / "events.jsonl")  # verified: a torn tail only on a run never sealed
    events = list(iter_events(run_dir / "events.jsonl", end=whole))
    started = next((e for e in events if e.get("type") == "run_started" and e.get("agent") is None), None)
    if started is None:
        raise UsageError(f"{run_dir}: the run never started (no run_started event)")
    try:
        task = (run_dir / "task.md").read_text(encoding="utf-8")
        summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8")) if sealed is not None else None
    except (OSError, ValueError) as exc:
        raise UsageError(f"{run_dir} is not a complete run directory: {exc}") from None
    return Recorded(run_dir, events, started, summary, sealed is not None, task, torn or None)


def _regular_files(run_dir: Path) -> None:
    """What is read of a recorded run is a regular file, or absent: a run directory is downloaded or unpacked
    (untrusted), and a FIFO or device named events.jsonl would hang the read or never end it (exit 2 instead)."""
    for name in ("events.jsonl", "summary.json", "task.md", "policy.json", "tools.json", "workspace.json",
                 "changes.patch"):
        try:
            mode = (run_dir / name).stat().st_mode
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise UsageError(f"{run_dir}/{name}: {exc.strerror or exc}") from None
        if not stat.S_ISREG(mode):
            raise UsageError(f"{run_dir}/{name} is not a regular file")


def choose_workspace(given: str | None, run: Recorded) -> Path:
    """--workspace; else the workspace the run directory sits in (WORKSPACE/.agent-run/runs/ID: a workspace
    moved, or unpacked from an artifact, brings its runs along) unless the run worked in one of its
    worktrees; else the workspace the run recorded, if it is here; else the current directory."""
    if given:
        path = Path(given).expanduser().resolve()
    else:
        recorded = Path(run.started.get("workspace") or "")
        layout = run.home
        own = recorded.is_absolute() and recorded.is_dir()
        if layout is not None and not (own and recorded.resolve().is_relative_to(layout / ".agent-run" / "worktrees")):
            path = layout
        else:
            path = recorded.resolve() if own else Path.cwd().resolve()
    if not path.is_dir():
        raise UsageError(f"workspace {path} is not a directory")
    return path


def checked_workspace(run: Recorded, given: str | None, verb: str, *, force: bool, apply: bool,
                      earlier: Sequence[Path] = ()) -> Path:
    """The workspace the run goes on in, checked to be in the state the run left it (runner/workspace/state.py),
    and `earlier` runs it continued (newest first) the state they left, unless `force` (which still applies the
    run's changes when `apply` asks); a difference `force` lets pass is said once on stderr."""
    workspace = choose_workspace(given, run)
    try:
        warning = check(workspace, run.run_dir, apply=apply, force=force, earlier=earlier)
    except WorkspaceMismatch as exc:
        raise UsageError(str(exc).replace("resume in", f"{verb} in")) from None
    if warning and not force:
        print(f"agent-run: warning: {warning}", file=sys.stderr)
    return workspace


def recorded_policy(run: Recorded, spec: str | None, workspace: Path, *, approvals: list[str] | None = None,
                    mode: str | None = None, keep_approvals: bool = False, sealed_only: bool = False,
                    warn: bool = True) -> Policy:
    """`spec` (`--policy`, a file or a shipped name) beats the run's own policy.json, which is used only when it
    verifies: sealed, or — a killed run — equal to the hash its run_started recorded. The snapshot's
    hard limits and own-output rules are left out (the new run adds its own, last), and so are its
    `--approve` rules unless `keep_approvals` (a replay decides under exactly what the run had).
    `sealed_only`: a killed run's snapshot is never used, even when its hash matches (a replay executes
    calls without the model: it takes no snapshot it cannot prove whole). `warn`: say on stderr when the
    policy file changed since the run."""
    if sealed_only and not run.sealed and not spec:
        raise UsageError(f"{run.run_dir} was never sealed (the run was killed before its summary): its policy snapshot "
                         "cannot be trusted; name the policy with --policy")
    dropped = {HARD_LIMIT, OWN_OUTPUTS} | (set() if keep_approvals else {"--approve"})
    try:
        if spec:
            policy = load_policy(spec)
        else:
            snapshot = run.run_dir / "policy.json"
            recorded = run.started.get("policy_sha256")
            if not run.sealed and (recorded is None or file_sha256(snapshot) != recorded):
                raise UsageError(f"{run.run_dir.name} was killed before its summary and its policy snapshot "
                                 "cannot be checked; name the policy with --policy")
            try:
                data = json.loads(snapshot.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise UsageError(f"{snapshot}: cannot read the run's policy snapshot ({exc}); name the policy with "
                                 "--policy") from None
            policy = policy_from_snapshot(data, run.started["policy"], base=run.home or workspace)
            policy.rules = [r for r in policy.rules if r.source not in dropped]
            if warn:
                _warn_if_changed(policy, workspace)
        if approvals:
            policy = policy.with_rules([parse_approval(a, i) for i, a in enumerate(approvals)])
    except PolicyError as exc:
        raise UsageError(str(exc)) from None
    return policy.with_mode(mode) if mode else policy


def _warn_if_changed(snapshot: Policy, workspace: Path) -> None:
    path = snapshot.path
    try:
        current = load_policy(str(resolve_policy_path(path)))
    except (PolicyError, OSError, FileNotFoundError):
        return
    mine = [(r.domain, r.pattern.raw, r.decision) for r in snapshot.rules if r.source in snapshot.files]
    theirs = [(r.domain, r.pattern.raw, r.decision) for r in current.rules if r.source in current.files]
    if mine != theirs or current.mode != snapshot.mode:
        print(f"agent-run: warning: {portable(path, workspace)} changed since the run; continuing under the run's "
              "snapshot of it (pass --policy to use the file as it is now)", file=sys.stderr)


def recorded_settings(run: Recorded, policy: Policy, cli: dict[str, Any], env_files: tuple[Path, ...]) -> Settings:
    """A continued run's settings: the flags given now, over the policy's, with the run's model by default."""
    return settings_for(cli, env_files, {**policy_layer(policy.sections), "model": run.started.get("model")})


def note_torn_tail(rec: Recording, run: Recorded) -> None:
    """A `warning` event (code torn_tail) and a line on stderr when the run's log ended in a torn line, which
    the continuation left out (the original run is never modified)."""
    if run.torn_tail_bytes:
        message = (f"{run.run_dir.name}/events.jsonl ended in an incomplete line ({run.torn_tail_bytes} bytes, "
                   "a kill mid-write); going on from its last complete line")
        print(f"agent-run: warning: {message}", file=sys.stderr)
        rec.emit(RunWarning(code="torn_tail", message=message))


def note_cache_break(rec: Recording, conversation: Conversation) -> None:
    """The log kept `[REDACTED:kind]` where the original prompt had a secret: from that message on, the
    continued prompt differs from the one the provider cached (summary `prompt_cache_break`)."""
    if conversation.masked is not None:
        rec.lifecycle.section("prompt_cache_break", {"message_index": conversation.masked,
                                                     "reason": "a masked secret in the history"})
