"""A run's lifecycle: the named phases its parts attach to, and summary.json's sections.

Every part of a run that must see its events, add to its summary or release something at its end registers here
by phase, instead of appending to lists on the recording:

- `event`: every event, as it is emitted, in the order the hooks were registered (the log, the audit file, the
  summary fold, progress, telemetry, budgets, turn counters).
- `summary`: once the run's ending is known, each producer writes its own section of summary.json — its keys, each
  declared in runner/schemas/summary.schema.json (the test suite validates every run's summary against it).
  A section known before the end (the task's title, the sandbox) is declared at once with `section`.
- `close`: after summary.json is built, what the run held open (MCP servers, the sandbox, the change tracker),
  most recently opened first where it matters (`first=True`).

The loop's own points, where lifecycle hooks attach, are typed in runner/engine/hooks.py.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from enum import StrEnum
from typing import Any

from runner.core.events import Event

EventHook = Callable[[Event], None]
SummaryHook = Callable[[dict[str, Any]], None]  # amends summary.json's data with its own section
CloseHook = Callable[[], None]


class Phase(StrEnum):
    EVENT = "event"
    SUMMARY = "summary"
    CLOSE = "close"


class Lifecycle:
    """The hooks of one run, by phase, and the summary sections declared before its end."""

    def __init__(self, event_hooks: list[EventHook]) -> None:
        self._events: list[EventHook] = list(event_hooks)
        self._summary: list[SummaryHook] = []
        self._close: list[CloseHook] = []
        self._sections: dict[str, Any] = {}

    def on_event(self, hook: EventHook) -> None:
        self._events.append(hook)

    def on_summary(self, hook: SummaryHook) -> None:
        self._summary.append(hook)

    def on_close(self, hook: CloseHook, *, first: bool = False) -> None:
        """`first`: before those registered already (opened later, so closed sooner: a server before the sandbox)."""
        if first:
            self._close.insert(0, hook)
        else:
            self._close.append(hook)

    def section(self, key: str, value: object) -> None:
        """One key of summary.json, known now (its later value replaces an earlier one)."""
        self._sections[key] = value

    def sections(self, keys: Mapping[str, object]) -> None:
        """Several keys of summary.json at once (a producer's whole section)."""
        self._sections.update(keys)

    def declared(self, key: str) -> Any:
        """A section declared so far, or None."""
        return self._sections.get(key)

    def summary_hooks(self, hook_type: type[Any] | None = None) -> Iterator[SummaryHook]:
        """The summary hooks registered, in order (`hook_type`: only those of that class)."""
        return (h for h in self._summary if hook_type is None or isinstance(h, hook_type))

    def emit(self, event: Event) -> None:
        for hook in self._events:
            hook(event)

    def summarize(self, data: dict[str, Any]) -> None:
        """The sections declared, then each summary hook in order; a full disk costs that section (`errors`), not
        the rest."""
        data.update(self._sections)

    def finish(self, data: dict[str, Any]) -> None:
        for hook in self._summary:
            try:
                hook(data)
            except OSError as exc:
                data.setdefault("errors", []).append(f"{exc.strerror or exc}")

    def close(self) -> None:
        for hook in self._close:
            with contextlib.suppress(Exception):  # a leftover temp dir must not cost the summary
                hook()
