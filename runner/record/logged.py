"""events.jsonl read back as the typed events of runner/core/events.py: the inverse of `EventLog`'s record
(runner/record/rundir.py), for every reader of a run's log.

A log is not always this version's: a run of an older agent-run lacks fields added since, a newer one has
fields and event types this one does not know, and a hand-edited or downloaded log can hold anything. So
`parse_event` never raises on a record: a field the record lacks, or holds with another JSON type than the
class declares, reads as the field's default, or None when it has none (a reader of logs that are not this
run's own tolerates None in any field); an event type this version does not know is an `Unknown` event,
kept with its fields, not dropped and not an error.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from runner.core import events as _events
from runner.core.events import Event, tag
from runner.record.jsonl import BadLine, iter_events

ENVELOPE = ("seq", "ts", "run_id", "type", "prev", "agent")  # what EventLog adds around an event's fields


@dataclass(frozen=True)
class Unknown(Event):
    """An event of a type this version does not know (a newer runner's), with its fields as recorded.
    Its `type` is the recorded one, so a reader that dispatches on types passes it by."""

    type: ClassVar[str] = "unknown"
    kind: str
    data: dict[str, Any]

    def __post_init__(self) -> None:
        object.__setattr__(self, "type", self.kind)  # frozen: the instance's own type, set once here

    def fields(self) -> dict[str, Any]:
        return dict(self.data)


@dataclass(frozen=True)
class Logged:
    """One line of events.jsonl: its envelope, its typed event, and the record as read (for a reader that
    shows a record whole, in the order its keys were written: `runs show`'s compaction rows). An envelope
    key the record lacks, or holds with another type, is None."""

    seq: int | None
    ts: str | None
    run_id: str | None
    prev: str | None
    event: Event
    record: Mapping[str, Any]

    @property
    def agent(self) -> dict[str, Any] | None:
        return self.event.agent


def event_classes() -> dict[str, type[Event]]:
    """Every event type the writer records, by its `type`."""
    return dict(_classes())


@functools.cache
def _classes() -> dict[str, type[Event]]:
    found: dict[str, type[Event]] = {}
    for value in vars(_events).values():
        if isinstance(value, type) and issubclass(value, Event) and value is not Event:
            found[value.type] = value
    return found


@dataclass(frozen=True)
class _Field:
    name: str  # the dataclass field's
    key: str  # the record's (a field renamed: `from`)
    accepts: tuple[type, ...] | None  # the JSON types it may hold (None: anything)
    default: object  # when the record lacks it (or holds another type)
    factory: Callable[[], object] | None  # the default's, when it is made afresh for each event

    def absent(self) -> object:
        return self.factory() if self.factory is not None else self.default


_FIELDS: dict[str, tuple[_Field, ...]] = {}  # by event type: worked out once, at its first record


def _fields(cls: type[Event]) -> tuple[_Field, ...]:
    known = _FIELDS.get(cls.type)
    if known is None:
        known = _FIELDS[cls.type] = _fields_of(cls)
    return known


def _fields_of(cls: type[Event]) -> tuple[_Field, ...]:
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        default = None if f.default is dataclasses.MISSING else f.default
        factory = None if f.default_factory is dataclasses.MISSING else f.default_factory
        out.append(_Field(f.name, cls.renamed.get(f.name, f.name), _accepts(hints[f.name]), default, factory))
    return tuple(out)


def _accepts(hint: object) -> tuple[type, ...] | None:
    """The JSON types a field's annotation allows: its outer types only (a dict's values are not checked)."""
    if hint is Any:
        return None
    origin = typing.get_origin(hint)
    if origin is types.UnionType or origin is typing.Union:
        parts = [_accepts(arg) for arg in typing.get_args(hint)]
        if any(p is None for p in parts):
            return None
        return tuple(t for p in parts for t in p or ())
    if hint is type(None):
        return (type(None),)
    if hint is float:
        return (int, float)  # JSON writes 2.0 as 2.0, but a hand-written log may say 2
    base = origin or hint
    return (base,) if isinstance(base, type) else None  # an annotation that names no class: anything


def _holds(value: object, accepts: tuple[type, ...] | None) -> bool:
    if accepts is None:
        return True
    if isinstance(value, bool):  # a bool is an int to isinstance, never to JSON
        return bool in accepts
    return isinstance(value, accepts)


def parse_event(record: Mapping[str, Any]) -> Event:
    """The typed event of one events.jsonl record (never raises; see the module's docstring). A record with
    `agent` {id, …} is that subagent's event (`tag`)."""
    kind = record.get("type")
    cls = _classes().get(kind) if isinstance(kind, str) else None
    if cls is None:
        event: Event = Unknown(kind=kind if isinstance(kind, str) else "",
                               data={k: v for k, v in record.items() if k not in ENVELOPE})
    else:
        values: dict[str, Any] = {}
        for f in _fields(cls):
            value = record.get(f.key, f)
            if value is f or not _holds(value, f.accepts):
                value = f.absent()
            values[f.name] = value
        event = cls(**values)
    agent = record.get("agent")
    if isinstance(agent, dict) and agent.get("id"):
        tag(event, agent)
    return event


def parse_record(record: Mapping[str, Any]) -> Logged:
    return Logged(seq=_typed(record.get("seq"), int), ts=_typed(record.get("ts"), str),
                  run_id=_typed(record.get("run_id"), str), prev=_typed(record.get("prev"), str),
                  event=parse_event(record), record=record)


def _typed(value: object, kind: type) -> Any:
    return value if isinstance(value, kind) and not isinstance(value, bool) else None


def read_log(path: Path, end: int | None = None, on_bad: Callable[[BadLine], None] | None = None) -> Iterator[Logged]:
    """events.jsonl as typed events, streamed (runner/record/jsonl.py iter_events: a line that is no record —
    not a JSON object, over the line cap or the depth cap — is left out and told to `on_bad`; nothing when the
    file is absent or not a regular file; `end`: only the first `end` bytes)."""
    for record in iter_events(path, end, on_bad):
        yield parse_record(record)
