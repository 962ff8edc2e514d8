"""audit.jsonl checked the way a compliance review reads it: every line valid against
runner/schemas/audit.schema.json, and exactly one line per `tool_call` of the run's events.jsonl."""

from __future__ import annotations

import json
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema

SCHEMA = Path(__file__).resolve().parents[2] / "runner" / "schemas" / "audit.schema.json"


@cache
def _validator() -> jsonschema.Draft202012Validator:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def audit_of(run_dir: Path) -> list[dict[str, Any]]:
    """The run's audit records, each validated; AssertionError unless they are one per tool call."""
    lines = (run_dir / "audit.jsonl").read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    for number, record in enumerate(records, start=1):
        error = jsonschema.exceptions.best_match(_validator().iter_errors(record))
        assert error is None, f"audit.jsonl:{number}: {error.message if error else ''}"
        assert record["seq"] == number
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text(encoding="utf-8").splitlines()]
    calls = Counter(f"{e['agent']['id']}:{e['call_id']}" if e["agent"] else e["call_id"]
                    for e in events if e["type"] == "tool_call")
    assert Counter(r["call_id"] for r in records) == calls, (records, calls)
    return records
