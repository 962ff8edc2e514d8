"""Checks a run's summary.json against runner/schemas/summary.schema.json, and a stream-json result line against
runner/schemas/result.schema.json (summary.json plus `type: result`; it carries a copy of the summary schema under
the summary's `$id`, so it validates alone, as check-jsonschema reads it)."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
from jsonschema import Draft202012Validator


def load_schema(name: str) -> dict[str, Any]:
    """`summary` or `result`: runner/schemas/NAME.schema.json."""
    return json.loads((resources.files("runner.schemas") / f"{name}.schema.json").read_text(encoding="utf-8"))


@cache
def validator(name: str) -> Draft202012Validator:
    return Draft202012Validator(load_schema(name), format_checker=Draft202012Validator.FORMAT_CHECKER)


def schema_error(name: str, data: Any) -> str | None:
    """The most relevant error of `data` against the NAME schema, as `where: message`, or None."""
    error = jsonschema.exceptions.best_match(validator(name).iter_errors(data))
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path) or "(top)"
    return f"{where}: {error.message}"


def validate_summary_file(path: Path | str) -> dict[str, Any]:
    """Raise AssertionError naming what is wrong with a summary.json; return it."""
    path = Path(path)
    data = json.loads(path.read_text(encoding="utf-8"))
    if (problem := schema_error("summary", data)) is not None:
        raise AssertionError(f"{path}: {problem}\n  {json.dumps(data)[:1500]}")
    return data


def validate_result_line(line: str | dict[str, Any]) -> dict[str, Any]:
    """A stream-json result line (the text or its object) against result.schema.json; return the object."""
    data = json.loads(line) if isinstance(line, str) else line
    if (problem := schema_error("result", data)) is not None:
        raise AssertionError(f"result line: {problem}\n  {json.dumps(data)[:1500]}")
    return data

