"""Task files: Markdown with optional YAML front matter.

    ---
    title: Fix the flaky test
    check: pytest -q tests/test_api.py
    model: gpt-4o
    max_turns: 20
    timeout: 600
    policy: ci
    check_attempts: 2
    ---
    The task text for the model…

`check` runs in the workspace after the agent finishes, under the same policy, and
decides pass/fail (runner/run/check.py: the runner's call, outside the guards); a failed check goes back to the
model up to `check_attempts` times in all, which may only lower --check-attempts. A broken
front matter is a usage error `file:line: message`.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any, Literal

import pydantic
import yaml

from runner.core.outcome import UsageError


class FrontMatter(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")

    title: str | None = None
    check: str | None = pydantic.Field(None, min_length=1)
    model: str | None = pydantic.Field(None, min_length=1)
    max_turns: int | None = pydantic.Field(None, ge=1)
    timeout: float | None = pydantic.Field(None, gt=0)
    policy: str | None = pydantic.Field(None, min_length=1)
    temperature: float | None = pydantic.Field(None, ge=0, le=2)
    top_p: float | None = pydantic.Field(None, gt=0, le=1)
    max_output_tokens: int | None = pydantic.Field(None, ge=1)
    seed: int | None = None
    reasoning_effort: Literal["minimal", "low", "medium", "high"] | None = None
    check_attempts: int | None = pydantic.Field(None, ge=1)


@dataclass
class Task:
    text: str  # what the model receives: the body, front matter removed
    title: str
    check: str | None = None
    overrides: dict[str, Any] = field(default_factory=dict)  # settings: model, max_turns, timeout
    policy: str | None = None
    check_attempts: int | None = None  # may only lower --check-attempts (trusted or not): `attempts`

    def attempts(self, setting: int) -> int:
        """How many times the check may run: the setting, lowered by the front matter's `check_attempts`."""
        return min(setting, self.check_attempts) if self.check_attempts is not None else setting


def parse_task(raw: str, file: str, default_title: str) -> Task:
    if not raw.startswith("---") or raw.split("\n", 1)[0].strip() != "---":
        return Task(raw, _title_of(raw, default_title))
    lines = raw.split("\n")
    end = next((i for i in range(1, len(lines)) if lines[i].strip() in ("---", "...")), None)
    if end is None:
        raise UsageError(f"{file}:1: front matter opened with --- is never closed")
    header = "\n".join(lines[1:end])
    body = "\n".join(lines[end + 1:]).lstrip("\n")
    try:
        data = yaml.safe_load(header) or {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 2 if mark is not None else 2  # +1 for 1-based, +1 for the opening ---
        problem = getattr(exc, "problem", None) or str(exc)
        raise UsageError(f"{file}:{line}: invalid front matter: {problem}") from None
    if not isinstance(data, dict):
        raise UsageError(f"{file}:2: front matter must be a mapping of keys to values")
    try:
        meta = FrontMatter.model_validate(data)
    except pydantic.ValidationError as exc:
        err = exc.errors()[0]
        key = str(err["loc"][0]) if err["loc"] else ""
        line = _line_of(lines[1:end], key) + 1
        if err["type"] == "extra_forbidden":
            raise UsageError(f"{file}:{line}: front matter: {unknown_key(key)}") from None
        raise UsageError(f"{file}:{line}: front matter {key!r}: {err['msg']}") from None
    if not body.strip():
        raise UsageError(f"{file}:{end + 1}: the task has front matter but no text")
    keys = ("model", "max_turns", "timeout", "temperature", "top_p", "max_output_tokens", "seed", "reasoning_effort")
    overrides = {k: getattr(meta, k) for k in keys if getattr(meta, k) is not None}
    return Task(body, meta.title or _title_of(body, default_title), meta.check, overrides, meta.policy,
                meta.check_attempts)


def unknown_key(key: str) -> str:
    """`unknown key 'max_turn' (did you mean 'max_turns'?)`, or the keys there are."""
    known = list(FrontMatter.model_fields)
    close = difflib.get_close_matches(key, known, n=1)
    hint = f"did you mean {close[0]!r}?" if close else "known keys: " + ", ".join(known)
    return f"unknown key {key!r} ({hint})"


def _line_of(header: list[str], key: str) -> int:
    for i, text in enumerate(header, start=1):
        if text.split(":", 1)[0].strip() == key:
            return i
    return 1


def _title_of(text: str, default: str) -> str:
    for line in text.splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return default
