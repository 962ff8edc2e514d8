"""Tamper evidence for a run directory: what `replay` executes is what the human saw.

Each `events.jsonl` record carries `prev`, the sha256 of the line before it (the first
carries GENESIS), so no line can be changed, dropped or inserted without breaking every
later link. At the end, `summary.json`'s `integrity` seals the chain's head together
with the sha256 of `task.md`, `policy.json` and `changes.patch`:

    {"events_head": H_events, "files": {"task.md": …}, "sha256": H}

H is printed in the step summary and as the action output `events-sha256`, outside the
artifact, so a downloaded run can be checked with `replay --expect-hash H`. Pure
functions but for reading files.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from runner.core.jsonutil import canonical

GENESIS = "0" * 64
SEALED_FILES = ("task.md", "policy.json", "changes.patch", "tools.json", "workspace.json", "output.json")


class TamperError(ValueError):
    """The run directory does not match its own record: refuse to act on it (exit 2)."""


def line_hash(line: str) -> str:
    return hashlib.sha256(line.rstrip("\n").encode("utf-8")).hexdigest()


def file_hashes(run_dir: Path) -> dict[str, str]:
    return {name: hashlib.sha256((run_dir / name).read_bytes()).hexdigest()
            for name in SEALED_FILES if (run_dir / name).is_file()}


def seal(run_dir: Path, events_head: str) -> dict[str, Any]:
    files = file_hashes(run_dir)
    return {"events_head": events_head, "files": files, "sha256": _final(events_head, files)}


def _final(events_head: str, files: dict[str, str]) -> str:
    return hashlib.sha256(canonical({"events_head": events_head, "files": files}).encode("utf-8")).hexdigest()


def check_chain(path: Path) -> str:
    """The head of an intact chain; TamperError naming the first broken line."""
    prev = GENESIS
    with path.open("r", encoding="utf-8") as f:
        for n, line in enumerate(f, start=1):
            if not line.endswith("\n"):
                raise TamperError(f"{path}:{n}: the last line is incomplete")
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                raise TamperError(f"{path}:{n}: not a JSON record") from None
            if not isinstance(record, dict) or record.get("prev") != prev:
                raise TamperError(f"{path}:{n}: the hash chain is broken here (the record was changed, "
                                  "removed or inserted)")
            prev = line_hash(line)
    return prev


def verify(run_dir: Path, expect: str | None = None) -> str | None:
    """The run's final hash when it verifies; None when the run was never sealed (killed before
    its summary) and no hash is expected. Raises TamperError otherwise."""
    head = check_chain(run_dir / "events.jsonl")
    try:
        summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    except FileNotFoundError:
        summary = None
    except (OSError, ValueError) as exc:
        raise TamperError(f"{run_dir}/summary.json: unreadable: {exc}") from None
    sealed = (summary or {}).get("integrity") if isinstance(summary, dict) else None
    if not isinstance(sealed, dict):
        if expect is not None:
            raise TamperError(f"{run_dir} was never sealed (no summary.json integrity): cannot match --expect-hash")
        return None
    if sealed.get("events_head") != head:
        raise TamperError(f"{run_dir}/events.jsonl does not end where summary.json says it does")
    files = file_hashes(run_dir)
    for name in sorted(set(files) | set(sealed.get("files") or {})):
        if files.get(name) != (sealed.get("files") or {}).get(name):
            raise TamperError(f"{run_dir}/{name} was changed after the run (its sha256 does not match)")
    final = _final(head, files)
    if sealed.get("sha256") != final:
        raise TamperError(f"{run_dir}/summary.json: the integrity hash does not match its own fields")
    if expect is not None and expect.lower() != final:
        raise TamperError(f"{run_dir}: hash {final} is not the expected {expect}")
    return final
