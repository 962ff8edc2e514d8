"""A recorded run's conversation, rebuilt exactly as it was sent, from its run directory.

The loop keeps a snapshot of the messages as sent whenever a request does not simply extend the
previous one (the first request of a run; after pruning or a summary): `model_request.snapshot`
names `history/<n>.json` and its sha256. From the last such request on, the conversation only
grew, and every message it grew by is an event: the model's reply (`model_response`), each tool's
result (`tool_result.content`, what the model received) and each message the runner added
(`user_message`). So the last snapshot plus the events after it is the conversation, byte for byte
(up to masking: a secret the log masked is `[REDACTED:kind]` here, and `masked` says so).

Pure functions over parsed events; nothing here writes.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runner.core.jsonutil import canonical
from runner.record.mask import MARKER

NOT_EXECUTED = canonical({"error": {"type": "IOError", "message": "this call was not executed: the run ended "
                                                                  "before it"}})


class ConversationError(ValueError):
    """The run directory cannot give its conversation back (a snapshot missing or altered)."""


@dataclass
class Conversation:
    messages: list[dict[str, Any]]
    last_turn: int  # the last turn whose reply is in `messages` (0: none)
    last_prompt: list[dict[str, Any]] | None  # the messages of the last request sent (through last_turn)
    unanswered: list[str] = field(default_factory=list)  # calls the run never executed (given NOT_EXECUTED)
    masked: int | None = None  # index of the first message holding a masked secret, if any


def rebuild(run_dir: Path, events: list[dict[str, Any]], upto_turn: int | None = None,
            results: dict[str, str] | None = None, agent: str | None = None) -> Conversation:
    """The conversation through `upto_turn` (default: all of it) — every turn complete with its tool
    results. `results` replaces recorded results by call id (approved replays of denied calls). `agent`:
    a subagent's conversation (by its id; its events are in the same log), else the run's own."""
    results = results or {}
    events = of_agent(events, agent)
    requests = [i for i, e in enumerate(events) if e.get("type") == "model_request"
                and (upto_turn is None or e["turn"] <= upto_turn)]
    base = next((i for i in reversed(requests) if events[i].get("snapshot")), None)
    if base is None:
        raise ConversationError(f"{run_dir}: no recorded prompt to continue from (the run made no model request, "
                                "or was recorded by a version before sessions)")
    messages = load_messages(run_dir, events[base]["snapshot"])
    last_prompt = list(messages)
    last_turn = events[base]["turn"] - 1
    expecting = True  # the next model_response answers a request (a compaction call's does not)
    pending: list[str] = []
    for e in events[base:]:
        kind = e.get("type")
        if kind == "model_request":
            if upto_turn is not None and e["turn"] > upto_turn:
                break
            if e is not events[base]:
                _close(messages, pending, results)
                last_prompt = list(messages)
            expecting = True
        elif kind == "model_response" and expecting:
            expecting = False
            messages.append(e["message"])
            last_turn = e["turn"]
            pending = [c.get("id", "") for c in e["message"].get("tool_calls") or []]
        elif kind == "tool_call" and e.get("source") == "text" and not expecting and not pending:
            # A call the model wrote as text: the reply was sent back carrying it (runner/engine/loop.py
            # with_text_call), the same keys in the same order.
            messages[-1] = {"role": "assistant", "content": messages[-1].get("content"),
                            "tool_calls": [{"id": e["call_id"], "type": "function",
                                            "function": {"name": e["tool"], "arguments": e["arguments"]}}]}
            pending = [e["call_id"]]
        elif kind == "tool_result" and e.get("call_id") in pending:
            pending.remove(e["call_id"])
            content = results.get(e["call_id"], e.get("content", ""))
            messages.append({"role": "tool", "tool_call_id": e["call_id"], "content": content})
        elif kind == "user_message" and not expecting and not pending:
            messages.append({"role": "user", "content": e["content"]})
    unanswered = list(pending)
    _close(messages, pending, results)
    masked = next((i for i, m in enumerate(messages) if MARKER in canonical(m)), None)
    return Conversation(messages, last_turn, last_prompt, unanswered, masked)


def of_agent(events: list[dict[str, Any]], agent: str | None) -> list[dict[str, Any]]:
    """The events of one agent: the run's own (`agent` null) or a subagent's, by id."""
    return [e for e in events if (e.get("agent") or {}).get("id") == agent]


def _close(messages: list[dict[str, Any]], pending: list[str], results: dict[str, str]) -> None:
    """Every tool call gets a result message (the API requires it): an approved result, else 'not executed'."""
    for cid in pending:
        messages.append({"role": "tool", "tool_call_id": cid, "content": results.get(cid, NOT_EXECUTED)})
    pending.clear()


def load_messages(run_dir: Path, ref: dict[str, str]) -> list[dict[str, Any]]:
    """The snapshot `ref` names, each message checked against the hash it is stored under."""
    path = run_dir / ref["path"]
    try:
        raw = read_recorded(path)
    except OSError as exc:
        raise ConversationError(f"{path}: {exc.strerror or exc}") from None
    if hashlib.sha256(raw).hexdigest() != ref["sha256"]:
        raise ConversationError(f"{path} was changed after the run (its sha256 does not match the event log)")
    out = []
    for entry in json.loads(raw):
        blob = path.parent / "messages" / f"{entry['sha256']}.json"
        try:
            text = read_recorded(blob).decode("utf-8")
        except OSError as exc:
            raise ConversationError(f"{blob}: {exc.strerror or exc}") from None
        if hashlib.sha256(text.encode("utf-8")).hexdigest() != entry["sha256"]:
            raise ConversationError(f"{blob} was changed after the run")
        out.append(json.loads(text))
    return out


def read_recorded(path: Path) -> bytes:
    """A recorded file's bytes; OSError unless it is a regular file: a run directory is untrusted, and a FIFO or
    a device under a recorded name (or a path the log names) would hang the read or never end it."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # no wait on a FIFO: checked after open
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        with os.fdopen(os.dup(fd), "rb") as f:
            return f.read()
    finally:
        os.close(fd)


def recorded_tools(run_dir: Path) -> list[dict[str, Any]] | None:
    """The `tools` array the run sent (tools.json), or None for a run recorded before it was kept."""
    try:
        return json.loads((run_dir / "tools.json").read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise ConversationError(f"{run_dir}/tools.json: {exc}") from None


def system_prompt_of(run_dir: Path, events: list[dict[str, Any]]) -> str | None:
    """The system prompt the run's own agent was sent (its first snapshot, verified), for the subagents of a
    resume or replay of it: never the workspace's AGENTS.md read again. None when not on record."""
    first = next((e for e in of_agent(events, None) if e.get("type") == "model_request" and e.get("snapshot")), None)
    if first is None:
        return None
    try:
        return system_text(load_messages(run_dir, first["snapshot"]))
    except (ConversationError, ValueError):
        return None


def system_text(messages: list[dict[str, Any]]) -> str | None:
    head = messages[0] if messages else {}
    return head.get("content") if head.get("role") == "system" and isinstance(head.get("content"), str) else None


def turns_of(events: list[dict[str, Any]]) -> int:
    return max((e["turn"] for e in events if e.get("type") == "model_response"), default=0)
