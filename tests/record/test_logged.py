"""events.jsonl read back as typed events (runner/record/logged.py): every event class, written by the real
EventLog, parses back equal to itself; a log of another version (fields missing, added, of another type, an
event type unknown here) parses without an error."""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from pathlib import Path
from typing import Any

import pytest

from runner.core import events
from runner.core.events import Event, ModelFallback, ModelResponse, ToolResult, tag
from runner.core.jsonutil import canonical
from runner.record.logged import ENVELOPE, Unknown, event_classes, parse_event, read_log
from runner.record.rundir import EventLog

ROOT = Path(__file__).resolve().parents[2]
CHILD = {"id": "a1", "name": "explore", "parent_call_id": "call_1_0", "depth": 1}


def _value(hint: Any, name: str) -> Any:
    """A value of the annotated type (a union's first member that is not None): every field set, none default."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        hint = next(a for a in typing.get_args(hint) if a is not type(None))
    base = typing.get_origin(hint) or hint
    return {str: f"{name}-text", int: 7, float: 1.5, bool: True, dict: {"k": 1}, list: ["item"]}.get(base, {"a": 1})


def _instances() -> list[Event]:
    out = []
    for cls in event_classes().values():
        hints = typing.get_type_hints(cls)
        full = cls(**{f.name: _value(hints[f.name], f.name) for f in dataclasses.fields(cls)})
        out += [full, tag(cls(**{f.name: _value(hints[f.name], f.name) for f in dataclasses.fields(cls)}), CHILD)]
    return out


def test_every_event_class_is_known_by_its_type():
    classes = [v for v in vars(events).values() if isinstance(v, type) and issubclass(v, Event) and v is not Event]
    assert sorted(c.type for c in classes) == sorted(event_classes())
    assert all(event_classes()[c.type] is c for c in classes)


def test_every_event_written_parses_back_equal_to_itself(tmp_path):
    written = _instances()
    log = EventLog(tmp_path / "events.jsonl", "run-1")
    for event in written:
        log(event)
    log.close()
    read = list(read_log(tmp_path / "events.jsonl"))
    lines = (tmp_path / "events.jsonl").read_text(encoding="utf-8").splitlines()
    assert [type(r.event) for r in read] == [type(e) for e in written]
    for event, logged, line in zip(written, read, lines, strict=True):
        assert logged.event == event and logged.event.agent == event.agent
        assert (logged.seq, logged.run_id, logged.ts) == (json.loads(line)["seq"], "run-1", json.loads(line)["ts"])
        again = {"seq": logged.seq, "ts": logged.ts, "run_id": logged.run_id, "type": logged.event.type,
                 "prev": logged.prev, "agent": logged.event.agent, **logged.event.fields()}
        assert canonical(again) == line


def test_a_recorded_run_parses_back_to_its_own_lines():
    path = ROOT / "examples" / "hello" / "recording" / "events.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    read = list(read_log(path))
    assert len(read) == len(lines) and not any(isinstance(r.event, Unknown) for r in read)
    for logged, line in zip(read, lines, strict=True):
        again = {"seq": logged.seq, "ts": logged.ts, "run_id": logged.run_id, "type": logged.event.type,
                 "prev": logged.prev, "agent": logged.event.agent, **logged.event.fields()}
        assert canonical(again) == line


def test_a_renamed_field_is_read_under_its_recorded_name():
    event = parse_event({"type": "model_fallback", "turn": 2, "from": "a", "to": "b", "reason": "overloaded"})
    assert event == ModelFallback(turn=2, from_model="a", to_model="b", reason="overloaded")


def test_an_unknown_event_type_is_kept_with_its_fields():
    record = {"seq": 4, "ts": "t", "run_id": "r", "type": "from_the_future", "prev": "p", "agent": CHILD,
              "answer": 42, "note": "x"}
    event = parse_event(record)
    assert isinstance(event, Unknown) and event.type == "from_the_future" and event.agent == CHILD
    assert event.fields() == {"answer": 42, "note": "x"}
    assert set(ENVELOPE).isdisjoint(event.fields())
    assert parse_event({"no": "type"}).type == "" and parse_event({"type": 3}).type == ""


@pytest.mark.parametrize("record, expected", [
    # an older run: fields added since are their defaults, or None
    ({"type": "tool_result", "call_id": "c", "tool": "read", "ok": True},
     ToolResult(call_id="c", tool="read", ok=True, error_type=None, bytes=None, sha256=None,
                duration_s=None)),
    # a newer run's added field is ignored; a field of another JSON type reads as absent
    ({"type": "model_response", "turn": "2", "message": {"role": "assistant"}, "usage": [1], "finish_reason": None,
      "duration_s": 1, "added_later": True},
     ModelResponse(turn=None, message={"role": "assistant"}, usage=None, finish_reason=None,
                   duration_s=1)),
    # true is not a number, and 1 is not a bool
    ({"type": "tool_result", "call_id": "c", "tool": "t", "ok": 1, "error_type": None, "bytes": True, "sha256": "s",
      "duration_s": 0.5, "details": None},
     ToolResult(call_id="c", tool="t", ok=None, error_type=None, bytes=None, sha256="s",
                duration_s=0.5)),
])
def test_a_record_of_another_version_parses_without_an_error(record, expected):
    event = parse_event(record)
    assert event == expected and event.agent is None


def test_an_agent_without_an_id_is_the_runs_own():
    assert parse_event({"type": "warning", "code": "c", "message": "m", "agent": {"name": "x"}}).agent is None
    assert parse_event({"type": "warning", "code": "c", "message": "m", "agent": "a1"}).agent is None


def test_a_line_that_is_not_an_object_is_skipped_and_the_envelope_is_typed(tmp_path):
    path = tmp_path / "events.jsonl"
    path.write_text('[1]\n{"seq": "1", "type": "warning", "code": "c", "message": "m"}\n{"torn', encoding="utf-8")
    (logged,) = read_log(path)
    assert logged.seq is None and logged.event == events.RunWarning(code="c", message="m")
    assert list(read_log(tmp_path / "absent.jsonl")) == []
