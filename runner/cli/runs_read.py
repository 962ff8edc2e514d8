"""What `runs list|show` read from a run directory: summary.json (made sane: a wrong-typed field is absent,
runner/report/summary_file.py) and events.jsonl, read back as typed events (runner/record/logged.py) and
streamed once, keeping only what is printed. What a run without a summary says of itself, and its denials,
come from summary.json's own fold (runner/report/summary.py), not from a second one here.

A log can hold events of many megabytes (a `write` of a big file, a tool's whole output): `account` keeps
per call only what `runs show` prints (the shortened arguments), or for `--json` the arguments on a spool
file (`Spool`) from which the JSON writer copies them out, so memory does not grow with the log's size.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import click

from runner.core.events import (
    Compaction,
    ModelRequest,
    ModelResponse,
    PermissionDecision,
    ToolCall,
    ToolResult,
    agent_id,
    call_ref,
)
from runner.record.jsonl import BadLine, iter_events
from runner.record.logged import read_log
from runner.record.rundir import runs_dir_for
from runner.report.summary import SummaryBuilder, fold
from runner.report.summary_file import read_summary, sane

ARGS_CHARS = 60
_WORD = re.compile(rf"\S{{1,{ARGS_CHARS + 1}}}")  # a longer word is cut there, and ends the text


def runs_root(workspace: str, runs_dir: str | None) -> Path:
    return runs_dir_for(runs_dir, Path(workspace).resolve())


def run_dirs(root: Path) -> list[Path]:
    """Run directories under root, newest first (a run id starts with its UTC start time)."""
    if not root.is_dir():
        return []
    found = [p for p in root.iterdir()
             if p.is_dir() and ((p / "summary.json").is_file() or (p / "events.jsonl").is_file())]
    return sorted(found, key=lambda p: p.name, reverse=True)


def origin(summary: dict[str, Any]) -> str:
    """What `runs list` puts before the title: `[replay of RUN]` (`agent-run replay`: approved calls run),
    `[resume of RUN]` (`replay --continue`: the conversation went on, so it has turns), `[model replay of
    DIR]` (`--model replay:DIR`); else ''."""
    if summary.get("replay_of"):
        kind = "resume" if (summary.get("turns") or 0) > 0 else "replay"
        return f"[{kind} of {summary['replay_of']}]"
    resumed = summary.get("resumed_from")
    if isinstance(resumed, dict):  # `agent-run resume` / `fork`
        at = f" at turn {resumed.get('at_turn')}" if resumed.get("kind") == "fork" else ""
        return f"[{resumed.get('kind')} of {resumed.get('run_id')}{at}]"
    model = str(summary.get("model") or "")
    if model.startswith("replay:"):
        return f"[model replay of {Path(model[len('replay:'):]).name}]"
    return ""


def overview(run_dir: Path) -> dict[str, Any]:
    """summary.json; for a run still going (or killed without one), what its events say so far (the summary's
    own fold, runner/report/summary.py, over the events read back)."""
    summary = read_summary(run_dir)
    if summary is not None:
        return summary
    facts = fold((logged.event for logged in read_log(run_dir / "events.jsonl", on_bad=left_out(run_dir))),
                 run_dir.name)
    return sane(facts.so_far()) or {}


_TOLD: set[tuple[str, int]] = set()  # (run dir, line) said already by this command: `runs show` reads a log twice


def left_out(run_dir: Path) -> Callable[[BadLine], None]:
    """What `runs` does with a line of the run's log that is no record (record/jsonl.py: longer than the writer's
    cap, nested past its depth, not JSON): leaves it out, and says so once on stderr, naming the line."""

    def tell(bad: BadLine) -> None:
        if (str(run_dir), bad.number) not in _TOLD:
            _TOLD.add((str(run_dir), bad.number))
            click.echo(f"agent-run: warning: {run_dir.name}/events.jsonl:{bad.number}: {bad.why}: left out", err=True)

    return tell


@dataclass(frozen=True)
class Spilled:
    """A call's arguments, JSON-encoded, at `offset` on the spool: `length` bytes."""

    offset: int
    length: int


class Spool:
    """Big tool-call arguments for `--json`, held in a temporary file (deleted when closed) instead of memory
    until the writer copies them out."""

    LIMIT = 1 << 16  # smaller arguments stay in memory: a usual run never touches the disk

    def __init__(self) -> None:
        self._file: IO[bytes] | None = None

    def keep(self, value: Any) -> Any:
        if not isinstance(value, str) or len(value) <= self.LIMIT:
            return value
        if self._file is None:
            self._file = tempfile.TemporaryFile()  # noqa: SIM115 -- closed by close(), after the writer
        self._file.seek(0, 2)
        offset = self._file.tell()
        # The same text either way for ASCII, and the ASCII encoder is several times faster.
        length = self._file.write(json.dumps(value, ensure_ascii=not value.isascii()).encode("utf-8"))
        return Spilled(offset, length)

    def copy(self, spilled: Spilled, out: IO[bytes], chunk: int = 1 << 20) -> None:
        assert self._file is not None
        self._file.seek(spilled.offset)
        left = spilled.length
        while left > 0:
            data = self._file.read(min(chunk, left))
            if not data:
                break
            out.write(data)
            left -= len(data)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()


def account(
        run_dir: Path, summary: dict[str, Any], spool: Spool | None = None) -> dict[str, Any]:
    """Everything `runs show` prints, from one pass over the events. Without a spool (the text view) a call
    keeps its arguments shortened (`args`); with one (`--json`) whole, big ones on the spool. The denials are
    summary.json's; for a run without them, the summary's fold over the same pass gives them."""
    requests: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    # Call ids are only unique within one agent's conversation (a subagent numbers its own): keyed by
    # call_ref, `a1:call_1_0`, as summary.json's denials and `replay --call` name a subagent's call.
    by_ref: dict[str, dict[str, Any]] = {}  # the latest call with that ref
    compactions: list[dict[str, Any]] = []
    pending: dict[str, dict[str, Any]] = {}  # per agent id, the request waiting for its response
    facts = None if isinstance(summary.get("denials"), list) else SummaryBuilder(run_dir.name, model="", policy="")
    for logged in read_log(run_dir / "events.jsonl", on_bad=left_out(run_dir)):
        e, seq = logged.event, logged.seq
        if facts is not None:
            facts(e)
        agent, aid = e.agent, agent_id(e)
        if isinstance(e, ModelRequest):
            pending[aid] = {"seq": seq, "turn": e.turn, "messages": e.message_count,
                            "estimated_tokens": e.estimated_tokens, "prompt_tokens": None,
                            "cached_tokens": None, "completion_tokens": None, "stage": e.stage,
                            "extends_previous": e.extends_previous, "agent": agent}
            requests.append(pending[aid])
        elif isinstance(e, ModelResponse):
            request = pending.pop(aid, None)
            if request is None:  # a response without its own request event (e.g. a compaction call)
                request = {"seq": seq, "turn": e.turn, "messages": None, "estimated_tokens": None,
                           "stage": None, "extends_previous": None, "agent": agent}
                requests.append(request)
            usage = e.usage or {}
            request.update(prompt_tokens=usage.get("prompt_tokens"), cached_tokens=usage.get("cached_tokens"),
                           completion_tokens=usage.get("completion_tokens"), finish_reason=e.finish_reason)
        elif isinstance(e, ToolCall):
            ref = call_ref(agent, str(e.call_id))
            call: dict[str, Any] = {"seq": seq, "turn": e.turn, "call_id": ref, "tool": e.tool,
                    "decision": None, "outcome": None, "bytes": None, "agent": agent}
            if spool is None:
                call["args"] = short_args(e.arguments)
            else:
                call["arguments"] = spool.keep(e.arguments)
            calls.append(call)
            by_ref[ref] = call
        elif isinstance(e, PermissionDecision):
            if (decided := by_ref.get(call_ref(agent, str(e.call_id)))) is not None:
                decided["decision"] = e.decision
                decided["policy_decision"] = e.policy_decision
        elif isinstance(e, ToolResult):
            if (ended := by_ref.get(call_ref(agent, str(e.call_id)))) is not None:
                ended["outcome"] = "ok" if e.ok else (e.error_type or "error")
                ended["bytes"] = e.bytes
        elif isinstance(e, Compaction):  # shown as recorded: every field it has, in the order it was written
            compactions.append({k: v for k, v in logged.record.items() if k not in ("ts", "run_id", "type")})
    denials = summary["denials"] if facts is None else facts.denials
    continued = list(iter_events(run_dir / "continuations.jsonl"))  # a torn line (a killed resume) is skipped
    return {"run_dir": str(run_dir), "summary": summary, "denials": denials, "requests": requests,
            "tool_calls": calls, "compactions": compactions, "continued_by": continued}


def short_args(raw: Any) -> str:
    """`path=notes.txt limit=5`, on one line, cut at ARGS_CHARS; never more than that is built, whatever
    the arguments' size."""
    if not isinstance(raw, str):
        return "-"
    try:
        parsed = json.loads(raw) if raw and not raw.isspace() else {}
    except (json.JSONDecodeError, RecursionError):
        parsed = None
    if isinstance(parsed, dict):
        pieces: Iterable[str] = (f"{k}={_value(v)}" for k, v in parsed.items())
    else:
        pieces = (raw,)
    text = " ".join(_words(pieces, ARGS_CHARS + 1)) or "-"
    return text if len(text) <= ARGS_CHARS else text[: ARGS_CHARS - 1] + "…"


def _value(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)


def _words(pieces: Iterable[str], limit: int) -> Iterator[str]:
    """The whitespace-separated words of the pieces (as `" ".join(pieces).split()`), a word cut at
    ARGS_CHARS + 1, until they add up to more than `limit` characters: a long word is never scanned to its end."""
    size = 0
    for piece in pieces:
        for m in _WORD.finditer(piece):
            word = m.group()
            yield word
            size += len(word) + 1
            if size > limit:
                return
