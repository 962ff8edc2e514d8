"""What `runs list|show` read from a run directory: summary.json (made sane: a wrong-typed field is absent,
runner/report/summary_file.py) and events.jsonl, streamed once, keeping only what is printed.

A log can hold events of many megabytes (a `write` of a big file, a tool's whole output): `account` keeps
per call only what `runs show` prints (the shortened arguments), or for `--json` the arguments on a spool
file (`Spool`) from which the JSON writer copies them out, so memory does not grow with the log's size.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from runner.core.events import MAIN, call_ref
from runner.record.jsonl import iter_events
from runner.record.rundir import runs_dir_for
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
    """summary.json; for a run still going (or killed without one), what its events say so far."""
    summary = read_summary(run_dir)
    if summary is not None:
        return summary
    out: dict[str, Any] = {"run_id": run_dir.name, "status": "running?", "turns": 0, "tool_calls": 0,
                           "usage": {"prompt_tokens": 0, "completion_tokens": 0, "cached_tokens": 0}}
    agents: dict[str, dict[str, Any]] = {MAIN: _agent_entry({"id": MAIN, "depth": 0})}
    for e in iter_events(run_dir / "events.jsonl"):
        kind = e.get("type")
        agent = agent_of(e)
        entry = agents.setdefault(str(agent["id"]) if agent else MAIN, _agent_entry(agent or {}))
        if kind == "run_started":
            out.update(model=e.get("model"), policy=e.get("policy"), replay_of=e.get("replay_of"),
                       resumed_from=e.get("resumed_from"))
            entry["model"] = e.get("model")
        elif kind == "model_response":
            turn = e.get("turn") if isinstance(e.get("turn"), int) else 0
            if agent is None:  # the run's turns are its own agent's; a subagent numbers its own from 1
                out["turns"] = max(out["turns"], turn)
            entry["turns"] = max(entry["turns"], turn)
            usage = e.get("usage") if isinstance(e.get("usage"), dict) else {}
            for key in out["usage"]:
                count = usage.get(key) if isinstance(usage.get(key), int) else 0
                out["usage"][key] += count
                entry["usage"][key] += count
        elif kind == "tool_call":
            out["tool_calls"] += 1
            entry["tool_calls"] += 1
        elif kind == "subagent_started":
            entry.update(model=e.get("model"), mode=e.get("mode"))
        elif kind == "subagent_finished":
            entry.update(status=e.get("status"), reason=e.get("reason"))
        elif kind == "run_finished":
            out.update(status=e.get("status"), exit_code=e.get("exit_code"), reason=e.get("reason"))
    if len(agents) > 1:
        out["agents"] = list(agents.values())
    return sane(out) or {}


def agent_of(e: dict[str, Any]) -> dict[str, Any] | None:
    agent = e.get("agent")
    return agent if isinstance(agent, dict) and agent.get("id") else None


def _agent_entry(agent: dict[str, Any]) -> dict[str, Any]:
    """A summary.json `agents` entry, as far as a run without a summary (still going, or killed) shows it."""
    return {"id": agent.get("id"), "name": agent.get("name"), "parent_call_id": agent.get("parent_call_id"),
            "depth": agent.get("depth"), "model": None, "status": "running?" if agent.get("id") != MAIN else None,
            "turns": 0, "tool_calls": 0, "usage": {"prompt_tokens": 0, "completion_tokens": 0, "cached_tokens": 0}}


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
    keeps its arguments shortened (`args`); with one (`--json`) whole, big ones on the spool."""
    requests: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    # Call ids are only unique within one agent's conversation (a subagent numbers its own): keyed by
    # call_ref, `a1:call_1_0`, as summary.json's denials and `replay --call` name a subagent's call.
    by_ref: dict[str, dict[str, Any]] = {}  # the latest call with that ref
    compactions: list[dict[str, Any]] = []
    denials: list[dict[str, Any]] = []
    pending: dict[str, dict[str, Any]] = {}  # per agent id, the request waiting for its response
    for e in iter_events(run_dir / "events.jsonl"):
        kind = e.get("type")
        agent = agent_of(e)
        aid = str(agent["id"]) if agent else MAIN
        ref = call_ref(agent, str(e.get("call_id")))
        if kind == "model_request":
            pending[aid] = {"seq": e.get("seq"), "turn": e.get("turn"), "messages": e.get("message_count"),
                            "estimated_tokens": e.get("estimated_tokens"), "prompt_tokens": None,
                            "cached_tokens": None, "completion_tokens": None, "stage": e.get("stage"),
                            "extends_previous": e.get("extends_previous"), "agent": agent}
            requests.append(pending[aid])
        elif kind == "model_response":
            request = pending.pop(aid, None)
            if request is None:  # a response without its own request event (e.g. a compaction call)
                request = {"seq": e.get("seq"), "turn": e.get("turn"), "messages": None, "estimated_tokens": None,
                           "stage": None, "extends_previous": None, "agent": agent}
                requests.append(request)
            usage = e.get("usage") if isinstance(e.get("usage"), dict) else {}
            request.update(prompt_tokens=usage.get("prompt_tokens"), cached_tokens=usage.get("cached_tokens"),
                           completion_tokens=usage.get("completion_tokens"), finish_reason=e.get("finish_reason"))
        elif kind == "tool_call":
            call = {"seq": e.get("seq"), "turn": e.get("turn"), "call_id": ref, "tool": e.get("tool"),
                    "decision": None, "outcome": None, "bytes": None, "agent": agent}
            if spool is None:
                call["args"] = short_args(e.get("arguments"))
            else:
                call["arguments"] = spool.keep(e.get("arguments"))
            calls.append(call)
            by_ref[ref] = call
        elif kind == "permission_decision":
            call = by_ref.get(ref)
            if call is not None:
                call["decision"] = e.get("decision")
                call["policy_decision"] = e.get("policy_decision")
            if e.get("decision") == "deny":
                denials.append(_denial(e))
        elif kind == "tool_result":
            call = by_ref.get(ref)
            if call is not None:
                call["outcome"] = "ok" if e.get("ok") else (e.get("error_type") or "error")
                call["bytes"] = e.get("bytes")
        elif kind == "compaction":
            compactions.append({k: v for k, v in e.items() if k not in ("ts", "run_id", "type")})
    if isinstance(summary.get("denials"), list):
        denials = summary["denials"]
    continued = list(iter_events(run_dir / "continuations.jsonl"))  # a torn line (a killed resume) is skipped
    return {"run_dir": str(run_dir), "summary": summary, "denials": denials, "requests": requests,
            "tool_calls": calls, "compactions": compactions, "continued_by": continued}


def _denial(e: dict[str, Any]) -> dict[str, Any]:
    """As summary.json records a denial (runner/report/summary.py), for a run without one."""
    targets = [t for t in e.get("targets") or [] if isinstance(t, dict)] or [{}]
    deciding = next((t for t in targets if t.get("decision") == e.get("policy_decision")), targets[0])
    agent = agent_of(e)
    return {"call_id": call_ref(agent, str(e.get("call_id"))), "tool": e.get("tool"),
            "domain": e.get("permissionDomain"), "target": deciding.get("target"),
            "decision": e.get("policy_decision"), "rule": e.get("rule"), "approve": e.get("approve"),
            "replay": e.get("replay"), "rerun": e.get("rerun"), **({"agent": agent} if agent else {})}


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
