"""A loaded skill stays followed (docs/skills.md#a-skill-stays-followed): a guard over the calls a skill governs
(while it is the agent's latest loaded skill: the tools its `allowed-tools` lists, or every tool without it).

- **Recited on reuse**: the first governed call RECITE_AFTER turns or more after the skill was loaded (or last
  recited) gets the skill's key rules (its front matter `reminder:`, else its first section) appended to its result.
- **Offered whole after repeated errors**: the second error of one type among governed calls since the skill was
  loaded (or last offered) gets the skill's whole text appended to its result.

Appended to that call's result only (earlier messages are never edited: the prompt's prefix stays stable). A denial
is the policy's answer, not a mistake in following the skill: it is not counted.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from fnmatch import fnmatchcase

from runner.guards.base import CallRecord, Verdict
from runner.tools.base import AgentState

RECITE_AFTER = 20  # turns
ERRORS_BEFORE_WHOLE = 2  # errors of one type
# A longer text is not appended to a result (which the context admitted without it): the model loads it again,
# through the skill tool and the admission every result passes.
WHOLE_MAX_BYTES = 16 * 1024


@dataclass
class SkillFollow:
    """One per agent (its state, its turn counter)."""

    state: AgentState
    turn: Callable[[], int]
    skill: str | None = None  # the skill the counts below are for
    since: int = 0  # the turn it was loaded, recited or offered whole
    errors: Counter[str] = field(default_factory=Counter)

    def __call__(self, record: CallRecord) -> Verdict | None:
        loaded = self.state.skill.loaded
        if record.tool == "skill" or loaded is None:
            if loaded is not None and record.error_type is None:  # (re)loaded: its text was just given
                self.skill, self.since, self.errors = loaded.name, self.turn(), Counter()
            return None
        if loaded.name != self.skill or not _governs(loaded.allowed, record.tool):
            return None
        if record.error_type is not None and not record.denied:
            self.errors[record.error_type] += 1
            if self.errors[record.error_type] >= ERRORS_BEFORE_WHOLE:
                self.errors, self.since = Counter(), self.turn()
                said = f"[agent-run: two {record.error_type} errors while you follow the skill '{loaded.name}'."
                if len(loaded.body.encode("utf-8")) > WHOLE_MAX_BYTES:  # a note bypasses the context's admission
                    return Verdict(notes=[f"{said} Load it again with the skill tool and follow it.]"])
                return Verdict(notes=[f"{said} Its whole text again:]\n{loaded.body}"])
        if self.turn() - self.since >= RECITE_AFTER and loaded.reminder:
            self.since = self.turn()
            return Verdict(notes=[f"[agent-run: you follow the skill '{loaded.name}'; its key rules:]\n"
                                  f"{loaded.reminder}"])
        return None


def _governs(allowed: tuple[tuple[str, str | None], ...] | None, tool: str) -> bool:
    return allowed is None or any(fnmatchcase(tool, name) for name, _ in allowed)
