"""Checks a run's events.jsonl against runner/schemas/events.schema.json, and what a
schema cannot say about a whole file: seq counts 1, 2, … by line, one run id
throughout (the run directory's name), and each tool_result's bytes and sha256
are those of its content (of the unmasked content, `redacted.sha256`, when masked), and each
record's `prev` is the sha256 of the line before it (its HMAC under the audit key whose id `run_started`
names: a test that sets AGENT_RUN_AUDIT_KEY registers the key with `register_audit_key`)."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
from jsonschema import Draft202012Validator

from runner.core.jsonutil import sha256_text
from runner.record.integrity import GENESIS, key_id, line_hash, recorded_claim

RUN_ID = re.compile(r"\d{8}T\d{12}Z-[0-9a-f]{6}")
AUDIT_KEYS: dict[str, bytes] = {}  # key id -> key, for keyed logs


def register_audit_key(key: bytes) -> None:
    AUDIT_KEYS[key_id(key)] = key


def load_schema() -> dict[str, Any]:
    return json.loads((resources.files("runner.schemas") / "events.schema.json").read_text(encoding="utf-8"))


@cache
def validator() -> Draft202012Validator:
    return Draft202012Validator(load_schema(), format_checker=Draft202012Validator.FORMAT_CHECKER)


def event_error(record: Any) -> str | None:
    """The most relevant schema error of one record, as `where: message`, or None."""
    error = jsonschema.exceptions.best_match(validator().iter_errors(record))
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path) or "(record)"
    return f"{where}: {error.message}"


def validate_events_file(path: Path | str) -> int:
    """Raise AssertionError naming the first bad line and what is wrong; return the number of events."""
    path = Path(path)
    run_id = path.parent.name if RUN_ID.fullmatch(path.parent.name) else None
    lines = path.read_text(encoding="utf-8").split("\n")
    if lines[-1] == "":
        lines.pop()  # the newline that ends the last event
    kid, _keyed = recorded_claim(path)
    if kid is not None and kid not in AUDIT_KEYS:
        raise AssertionError(f"{path}: keyed under {kid}, a key no test registered (register_audit_key)")
    key = AUDIT_KEYS.get(kid) if kid else None
    prev = GENESIS
    for number, line in enumerate(lines, start=1):
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise AssertionError(f"{path}:{number}: not a JSON object: {exc}") from None
        problem = event_error(record) or _file_error(record, number, run_id)
        if problem is None and record.get("prev") != prev:
            problem = "prev is not the sha256 of the line before (the hash chain is broken)"
        prev = line_hash(line, key)
        if problem is not None:
            kind = record.get("type", "?") if isinstance(record, dict) else "?"
            raise AssertionError(f"{path}:{number}: {kind} event: {problem}\n  {line[:500]}")
        run_id = record["run_id"]
    return len(lines)


def _file_error(record: dict[str, Any], number: int, run_id: str | None) -> str | None:
    if record["seq"] != number:
        return f"seq is {record['seq']} on line {number}"
    if run_id is not None and record["run_id"] != run_id:
        return f"run_id {record['run_id']} in the events of run {run_id}"
    if record["type"] == "permission_decision" and record["sessionId"] != record["run_id"]:
        return f"sessionId {record['sessionId']} is not the run id"
    if record["type"] == "tool_result":
        content = record["content"]
        if record["redacted"] is not None:  # masked: the hashes are of what the model received, unmasked
            if record["sha256"] != record["redacted"]["sha256"]:
                return "sha256 is not that of the unmasked content (redacted.sha256)"
        elif record["bytes"] != len(content.encode("utf-8")) or record["sha256"] != sha256_text(content):
            return "bytes/sha256 are not those of content"
    return None


def run_event_logs(root: Path) -> Iterator[Path]:
    """Every events.jsonl under root that is in a run directory (named by its run id)."""
    for dirpath, _dirs, files in os.walk(root):
        if "events.jsonl" in files and RUN_ID.fullmatch(os.path.basename(dirpath)):
            yield Path(dirpath) / "events.jsonl"
