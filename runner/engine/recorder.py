"""A run directory being written. Whatever ends the run — success, a denial, a
broken policy, a model outage, a signal, a bug of ours — `record` emits
`run_finished`, writes `summary.json` atomically, and maps the ending to the exit
code through `outcome.exit_code`.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

from runner.core.events import Event, RunFinished, RunInterrupted, RunWarning
from runner.core.outcome import INTERRUPT_SIGNALS, Interrupted, RunEnded, Status, UsageError, exit_code
from runner.engine.cancel import RunCancel
from runner.engine.lifecycle import Lifecycle
from runner.record.announce import announce_run_dir
from runner.record.atomic import atomic_write
from runner.record.audit import AUDIT_FILE, AuditLog
from runner.record.commands import command
from runner.record.integrity import AUDIT_KEY_ENV, audit_key, key_id, seal
from runner.record.lock import Lock, LockHeld, LockUnusable, WorkspaceLock, acquire, lock_workspace
from runner.record.mask import Masker
from runner.record.rundir import EventLog, LogBroken, create_run_dir, run_ref, write_atomic, write_json
from runner.report.progress import Progress
from runner.report.summary import SummaryBuilder
from runner.report.transcript import transcript_of
from runner.telemetry.start import start_telemetry
from runner.tools.base import ToolContext


@dataclass
class RunOutcome:
    exit_code: int
    summary: dict[str, Any]
    run_dir: Path | None
    masker: Masker | None = None  # the run's, knowing every secret it was given (None: no run began)


@dataclass
class Recording:
    run_id: str
    run_dir: Path
    runs_dir: Path
    workspace: Path
    started: float  # time.monotonic()
    lifecycle: Lifecycle  # the run's hooks by phase: its events, summary.json's sections, what it closes
    summary: SummaryBuilder
    ctx: ToolContext
    masker: Masker  # every surface of the run writes through it (its tools' context holds the same one)
    answer: str | None = None
    home: Path | None = None  # where printed commands are run from: the workspace, or a worktree run's origin
    resume_with: tuple[str, ...] = ()  # what the printed resume repeats after the run (runner/run/options.py)
    audit_key_id: str | None = None  # the log is HMAC-chained under AGENT_RUN_AUDIT_KEY (run_started.audit_key_id)
    keyed: bool = False  # summary integrity.keyed: a key, and every command of the run sandboxed
    sealed: bool = False  # run_finished is written: nothing more is recorded (a straggler thread's event is dropped)
    _lock: threading.RLock = field(default_factory=threading.RLock, repr=False)

    def emit(self, event: Event) -> None:
        # The egress proxy decides and records from its own threads while a command runs, and so do the calls and
        # child agents that run beside others (runner/engine/batch.py).
        with self._lock:
            if self.sealed:
                return
            if threading.current_thread() is not threading.main_thread():
                self.lifecycle.emit(event)
                return
            # Where signals land: an interrupt waits until the event is whole everywhere (a line written with
            # its seq counted but its hash not yet the next line's `prev` would break the chain).
            with self.ctx.cancel.held():
                self.lifecycle.emit(event)

    def claim_keyed(self, sandboxed: bool) -> None:
        """Once the sandbox is known: the run claims its keyed chain only when commands cannot read the key
        (without the sandbox's PID namespace, /proc/<runner>/environ is theirs to read)."""
        if self.audit_key_id is None:
            return
        self.keyed = sandboxed
        if not sandboxed:
            message = (f"{AUDIT_KEY_ENV} is set but commands run without the sandbox, where they could read it: "
                       "the run is recorded as not keyed (integrity.keyed false)")
            print(f"agent-run: warning: {message}", file=sys.stderr)
            self.emit(RunWarning(code="audit_key_unused", message=message))

    def finished_status(self) -> tuple[Status, str | None]:
        """The ending of a run whose work completed: denied if anything was denied."""
        if self.summary.denials:
            return Status.DENIED, f"{len(self.summary.denials)} tool call(s) denied by the policy"
        return Status.SUCCESS, None


class _Signals:
    """First SIGINT/SIGTERM/SIGHUP raises Interrupted where the main thread is; a second
    exits at once; once cleanup has started, signals wait for it to finish."""

    def __init__(self, cancel: RunCancel) -> None:
        self.cancel = cancel
        self.fired: int | None = None
        self.cleaning = False
        self._old: dict[int, Any] = {}

    def install(self) -> None:
        for sig in INTERRUPT_SIGNALS:
            self._old[sig] = signal.signal(sig, self._handle)

    def restore(self) -> None:
        for sig, old in self._old.items():
            # An interrupted run is recorded and its process is on its way out with 128 + that signal: a
            # repeated signal (GitHub's SIGTERM after its SIGINT) must not turn that into a death by signal. SIG_IGN
            # itself: Python puts a Python-level handler back to the default as it shuts down, where a signal then
            # killed the process. Nothing is started after this that would inherit it (the record is complete).
            signal.signal(sig, signal.SIG_IGN if self.fired is not None else old)

    def _handle(self, signum: int, _frame: FrameType | None) -> None:
        if self.cleaning:
            return
        if self.fired is not None:  # exit at once, but never leave a tool's process group running
            self.cancel.exit_now(signum)
            return
        self.fired = signum
        if self.cancel.interrupt(signum):  # a tool is starting a process: raised once it can kill it
            return
        raise Interrupted(signum)


def early_failure(reason: str) -> RunOutcome:
    """A usage error found before there is a run directory to record it in."""
    code = exit_code(Status.USAGE_ERROR)
    return RunOutcome(code, {"status": Status.USAGE_ERROR.value, "exit_code": code, "reason": reason}, None)


@dataclass
class Held:
    """The locks a run holds besides its own directory's, taken before anything else is done: a resume takes
    them before it checks (or changes) the workspace, so a second resume cannot get that far."""

    locks: list[Lock | WorkspaceLock] = field(default_factory=list)
    takeover: dict[str, Any] | None = None  # the dead holder's record, when the continued run's lock was left

    def release(self) -> None:
        for lock in self.locks:
            lock.release()
        self.locks.clear()


def hold_workspace(held: Held, workspace: Path, runs_dir: Path) -> None:
    """The workspace's lock (one run at a time; what --shared-workspace waives), or UsageError naming the holder."""
    try:
        held.locks.append(lock_workspace(workspace, runs_dir))
    except LockHeld as exc:
        raise UsageError(f"{exc}; wait for it, or pass --shared-workspace to run beside it (each run then sees "
                         "the other's changes)") from None
    except OSError as exc:  # never run on unlocked: a second run could then share it unknowingly
        raise UsageError(f"cannot lock the workspace {workspace}: {exc.strerror or exc}") from None


def hold_continued(held: Held, run_dir: Path) -> None:
    """The lock of the run a resume, fork or replay continues (always taken, --shared-workspace or not), or
    UsageError: held by a live process, or a `.lock` that is not a lock file (runner/record/lock.py)."""
    try:
        lock = acquire(run_dir, f"run {run_dir.name}")
    except LockHeld as exc:
        raise UsageError(f"{exc}; wait for it to finish") from None
    except LockUnusable as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:  # a run directory on a read-only mount (an unpacked artifact): nobody can write it
        print(f"agent-run: warning: cannot lock {run_dir} (read-only): {exc.strerror or exc}", file=sys.stderr)
        return
    held.locks.append(lock)
    held.takeover = lock.taken_over


@dataclass(frozen=True)
class Where:
    """Where a run is recorded: its workspace, its runs directory, where its printed commands are run from (`home`:
    the workspace, or a worktree run's origin), the run it continues (a resume, fork or replay) and whether it may
    run beside another run in the workspace."""

    workspace: Path
    runs_dir: Path
    home: Path | None = None
    continues: Path | None = None
    shared_workspace: bool = False


def record(where: Where, body: Callable[[Recording], tuple[Status, str | None]], *, verbosity: int = 1,
           stream_events: bool = False, held: Held | None = None) -> RunOutcome:
    """Run `body` in a new run directory. The run holds its directory's lock, the workspace's (unless
    `shared_workspace`) and, for a resume, fork or replay, the lock of the run it `continues`: a refusal
    (exit 2) names the holder, before anything is created. `held`: those locks, taken by the caller already
    (released here)."""
    workspace, runs_dir, continues = where.workspace, where.runs_dir, where.continues
    if held is None:
        held = Held()
        try:
            if not where.shared_workspace:
                hold_workspace(held, workspace, runs_dir)
            if continues is not None:
                hold_continued(held, continues)
        except UsageError as exc:
            held.release()
            return early_failure(exc.reason)
    try:
        return _record(workspace, runs_dir, verbosity, body, stream_events, held.takeover, where.home or workspace)
    finally:
        held.release()


def _record(workspace: Path, runs_dir: Path, verbosity: int, body: Callable[[Recording], tuple[Status, str | None]],
            stream_events: bool, takeover: dict[str, Any] | None, home: Path) -> RunOutcome:
    try:
        run_id, run_dir = create_run_dir(runs_dir, workspace)
        own = acquire(run_dir, f"run {run_id}", run_id)
    except (OSError, LockHeld, LockUnusable) as exc:
        return early_failure(f"cannot create run directory in {runs_dir}: {exc}")
    announce_run_dir(run_dir)  # for `agent-run batch`: a task killed from here on is still found
    masker = Masker(os.environ)  # one per run: every surface below writes through it (the audit key too)
    key = audit_key(os.environ)  # keyed from the first line: events may come before the sandbox is known
    log = EventLog(run_dir / "events.jsonl", run_id, sys.stdout if stream_events else None, masker, key)
    audit = AuditLog(run_dir / AUDIT_FILE, masker)  # one line per tool call (runner/record/audit.py)
    summary = SummaryBuilder(run_id, model="", policy="")
    last = ["start"]  # the type of the latest event, for the `interrupted` record

    started = [False]  # a run that never started (a usage error) has nothing to resume

    def track(event: Event) -> None:
        last[0] = event.type
        started[0] = started[0] or (event.type == "run_started" and getattr(event, "agent", None) is None)

    telemetry = start_telemetry(os.environ, masker, run_id)  # None unless the job asks for it (docs/telemetry.md)
    signals = _Signals(RunCancel())  # the run's stop: the signal handler's, and every tool's (ctx.cancel)
    rec = Recording(run_id, run_dir, runs_dir, workspace, time.monotonic(),
                    Lifecycle([log, audit, summary, Progress(sys.stderr, verbosity, masker), track,
                               *([telemetry.consume] if telemetry else [])]), summary,
                    ToolContext(workspace=workspace, cancel=signals.cancel, masker=masker), masker, home=home,
                    audit_key_id=key_id(key) if key else None)
    if takeover:  # the run continued here was left locked by a process that is gone
        rec.lifecycle.section("lock_takeover", takeover)
    signals.install()
    status, reason, signum = Status.FAILED, None, None
    try:
        try:
            status, reason = body(rec)
        except Interrupted as exc:
            signals.cleaning = True  # the record's end: a second signal (GitHub's SIGTERM) now waits for it
            status, reason, signum = exc.status, exc.reason, exc.signum
            rec.emit(RunInterrupted(signal=signal.Signals(exc.signum).name, during=last[0]))
        except RunEnded as exc:
            status, reason = exc.status, exc.reason
            rec.lifecycle.sections(exc.details)  # which loop, which budget, the figures
        except OSError as exc:  # the machine, not us: a full disk, a vanished directory
            status, reason = Status.FAILED, f"{exc.strerror or exc}" + (f": {exc.filename}" if exc.filename else "")
        except Exception as exc:  # a bug of ours: record it, never lose the run
            status, reason = Status.FAILED, f"internal error: {type(exc).__name__}: {exc}"
            with contextlib.suppress(OSError):
                write_atomic(run_dir / "error.txt", masker.mask(traceback.format_exc())[0])
    except Interrupted as exc:  # a signal landed inside an except block above
        status, reason, signum = exc.status, exc.reason, exc.signum
    finally:
        signals.cleaning = True
        signals.cancel.kill_processes()  # every call is over: a process group still tracked must not outlive the run
        audit.close()  # the calls the run stopped under get their one line too, before the seal
        code = exit_code(status, signum)
        try:
            if telemetry is not None and (unreachable := telemetry.unreachable()):
                rec.emit(RunWarning(code="telemetry_unreachable", message=unreachable))
            rec.emit(RunFinished(status=status.value, exit_code=code, reason=reason, turns=summary.turns,
                                 tool_calls=summary.tool_calls))
        except LogBroken as exc:  # the last event could not be written: the summary still says why
            status, reason = Status.FAILED, reason or exc.reason
            code = exit_code(status, signum)
        except Exception as exc:  # a bug of ours in a consumer: the summary still says why
            status, reason = Status.FAILED, reason or f"internal error: {type(exc).__name__}: {exc}"
            code = exit_code(status, signum)
        with rec._lock:  # after run_finished nothing may follow: a straggler's event waits for this, then is dropped
            rec.sealed = True
        log.close()
        data: dict[str, Any] = {}
        try:
            data = _summarize(rec, log.head, status, code, reason, signum, resumable=started[0])
        except Exception as exc:  # the last resort: whatever broke here, CI still finds a summary
            code, data = _last_resort(rec, status, code, reason, exc)
        finally:
            own.release()  # last: a resume waiting on this run sees it sealed (and always released)
            if telemetry is not None:  # after summary.json: a collector can delay the exit (≤ 2 s), never change it
                telemetry.finish(data, warn_telemetry)
            signals.restore()
    return RunOutcome(code, data, run_dir, masker)


def warn_telemetry(message: str) -> None:
    print(f"agent-run: warning: telemetry_export_failed: {message}", file=sys.stderr)


def _summarize(rec: Recording, head: str, status: Status, code: int, reason: str | None, signum: int | None, *,
               resumable: bool) -> dict[str, Any]:
    """summary.json, built, masked, sealed and written; then transcript.md."""
    run_dir, masker = rec.run_dir, rec.masker
    data = rec.summary.build(status=status.value, exit_code=code, reason=reason,
                             duration_s=time.monotonic() - rec.started, answer=rec.answer)
    # `signal`: which one interrupted the run (SIGINT, SIGTERM, SIGHUP), null for every other ending.
    rec.lifecycle.summarize(data)
    data.update(run_dir=str(run_dir), signal=signal.Signals(signum).name if signum else None)
    data.update(commands_for(run_dir, rec.home or rec.workspace, data, resumable=resumable, again=rec.resume_with))
    rec.lifecycle.finish(data)
    rec.lifecycle.close()
    data = masker.mask_obj(data)[0]  # also what stdout, JUnit and the GitHub step summary show
    # Last: every sealed file (task.md, policy.json, changes.patch) is written by now.
    data["integrity"] = seal(run_dir, head, rec.keyed)
    try:
        write_json(run_dir / "summary.json", data)
    except OSError as exc:
        print(f"agent-run: cannot write summary.json: {exc.strerror or exc}", file=sys.stderr)
    write_transcript(run_dir, data, masker)
    return data


def _ascii(text: str) -> str:
    return text.encode("ascii", "backslashreplace").decode("ascii")


def _last_resort(rec: Recording, status: Status, code: int, reason: str | None,
                 exc: Exception) -> tuple[int, dict[str, Any]]:
    """A summary that cannot fail to be written (ASCII, nothing computed but the reason) when building the real
    one raised: the run's ending is still on record for CI, and the traceback in error.txt."""
    if status is Status.SUCCESS:  # a run whose record is incomplete did not succeed
        status, code = Status.FAILED, exit_code(Status.FAILED)
    why = f"{reason + '; ' if reason else ''}the run's record could not be completed: {type(exc).__name__}: {exc}"
    with contextlib.suppress(Exception):
        why = rec.masker.mask(why)[0]
    data: dict[str, Any] = {"type": "result", "run_id": rec.run_id, "status": status.value, "exit_code": code,
                            "reason": _ascii(why), "answer": None, "usage": {}, "denials": [],
                            "run_dir": _ascii(str(rec.run_dir))}
    print(f"agent-run: {data['reason']}", file=sys.stderr)
    try:
        atomic_write(rec.run_dir / "summary.json", (json.dumps(data, indent=2, sort_keys=True) + "\n").encode("ascii"))
    except Exception as err:
        print(f"agent-run: cannot write summary.json: {_ascii(str(err))}", file=sys.stderr)
    with contextlib.suppress(Exception):
        atomic_write(rec.run_dir / "error.txt", _ascii(traceback.format_exc()).encode("ascii"))
    return code, data


def commands_for(run_dir: Path, workspace: Path, summary: dict[str, Any], *, resumable: bool = True,
                 again: tuple[str, ...] = ()) -> dict[str, str]:
    """`resume` (a run that started; and `replay`, with denials), and `show` (its transcript): the commands that
    continue and read this run, naming it as they are run from the workspace root, so they work from a
    downloaded artifact too. `again`: the options the resume repeats after the run (its --skills, --agents)."""
    ref = run_ref(run_dir, workspace)
    out = {"show": command("runs", "show", ref, "--transcript")}
    if resumable:
        out["resume"] = command("resume", ref, *again)
    if summary.get("denials"):
        out["replay"] = command("replay", ref, "--approve")
    return out


def write_transcript(run_dir: Path, summary: dict[str, Any], masker: Masker) -> None:
    """transcript.md, after summary.json is on disk so that nothing here can cost it. It is not sealed
    (runner.record.integrity.SEALED_FILES): it is derived from events.jsonl and summary.json, which are, so it
    can show the final summary (integrity hash included), and `runs show --transcript` renders it afresh
    from those sealed sources rather than trusting this copy."""
    try:
        write_atomic(run_dir / "transcript.md", masker.mask(transcript_of(run_dir, summary))[0])
    except Exception as exc:  # a full disk, or a bug of ours: the run's record is complete without it
        print(f"agent-run: cannot write transcript.md: {exc}", file=sys.stderr)
