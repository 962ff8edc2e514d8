"""`--output-schema FILE`: a final answer that is a JSON object valid against a JSON Schema (`--findings`: the
built-in FINDINGS_SCHEMA, review findings).

The schema is the workflow's (trusted): its text goes into the system prompt once, as an
instruction (the prefix stays fixed). The final answer is parsed (a ```json fence around it is
fine) and validated; an invalid one gets the errors back as a user message, appended, and the model
tries again — MAX_REPAIRS times, then the run fails (exit 1) with the errors. A valid answer is
summary.json `output`, the file `output.json` (sealed), the action output `output`, and stdout in
text mode. `response_format: json_schema` is not used: grammar-constrained servers lose tool calling
under it, and a schema that must hold only for the last turn cannot be put on every request.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from runner.core.inputfile import read_input_text
from runner.core.jsonutil import MISSING, json_pointer
from runner.core.outcome import Failed, UsageError

MAX_REPAIRS = 2
MAX_ERRORS_SHOWN = 5
_FENCE = re.compile(r"^\s*```(?:json)?\s*\n(.*?)\n\s*```\s*$", re.S)


# `--findings`: review findings (runner/report/findings.py turns them into findings.json, SARIF and annotations).
FINDINGS_SCHEMA: dict[str, Any] = {
    "type": "object", "additionalProperties": False, "required": ["summary", "findings"],
    "properties": {
        "summary": {"type": "string"},
        "findings": {"type": "array", "items": {
            "type": "object", "additionalProperties": False,
            "required": ["path", "line", "severity", "title", "message"],
            "properties": {
                "path": {"type": "string", "minLength": 1, "description": "relative to the repository root"},
                "line": {"type": "integer", "minimum": 1},
                "end_line": {"type": "integer", "minimum": 1},
                "severity": {"enum": ["error", "warning", "note"]},
                "title": {"type": "string", "minLength": 1},
                "message": {"type": "string"},
                "rule": {"type": "string", "description": "an id for the kind of problem"},
                "suggestion": {"type": "string", "description": "replacement text for lines line..end_line"},
            }}},
    },
}
FINDINGS = "--findings"


class OutputSchema:
    def __init__(self, path: str | None, *, builtin: dict[str, Any] | None = None) -> None:
        """The schema in the file at `path`, or a `builtin` one (--findings: `path` None)."""
        import jsonschema  # only runs that ask for it

        self.source = "--output-schema" if builtin is None else FINDINGS
        try:
            self.text = (json.dumps(builtin, indent=2) if builtin is not None
                         else read_input_text(Path(str(path)).expanduser(), "--output-schema"))
            self.schema = json.loads(self.text)
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"cannot read --output-schema {path}: {getattr(exc, 'strerror', None) or exc}") from None
        except json.JSONDecodeError as exc:
            raise UsageError(f"{path}:{exc.lineno}:{exc.colno}: --output-schema is not JSON: {exc.msg}") from None
        try:
            validator = jsonschema.validators.validator_for(self.schema)
            validator.check_schema(self.schema)
        except jsonschema.SchemaError as exc:
            raise UsageError(f"{path}: --output-schema is not a valid JSON Schema: {exc.message}") from None
        missing = _unresolved_refs(self.schema)
        if missing:  # found now, not after the whole run has been paid for
            raise UsageError(f"{path}: --output-schema has $ref that do not resolve inside it: "
                             f"{', '.join(missing[:3])} (only local references, #/…, are supported)")
        self.validator = validator(self.schema)
        self.repairs = 0
        self.value: Any = None
        self.path = path

    @classmethod
    def findings(cls) -> OutputSchema:
        return cls(None, builtin=FINDINGS_SCHEMA)

    @classmethod
    def given(cls, path: str | None, findings: bool) -> OutputSchema | None:
        """The run's schema: --output-schema FILE, --findings (not both: exit 2), or none."""
        if findings and path:
            raise UsageError("--findings is an output schema of its own: it cannot be used with --output-schema")
        return cls.findings() if findings else cls(path) if path else None

    def keep(self, rec: Any) -> None:
        """The validated value: summary `output`, output.json (sealed), stdout in text mode."""
        from runner.record.rundir import write_json

        rec.lifecycle.section("output", self.value)
        write_json(rec.run_dir / "output.json", rec.masker.mask_obj(self.value)[0])  # as summary.json's `output`

    def instructions(self) -> str:
        return ("When the task is done, your final answer (the reply without tool calls) must be exactly one JSON "
                "value, with no other text, that validates against this JSON Schema:\n\n```json\n"
                f"{self.text.strip()}\n```")

    def check(self, answer: str) -> str | None:
        """None when the answer is valid (kept in `value`); else what the model is told. Raises Failed after
        MAX_REPAIRS attempts."""
        errors = self.errors(answer)
        if not errors:
            return None
        if self.repairs >= MAX_REPAIRS:
            raise Failed(f"the final answer does not match {self.source} after {MAX_REPAIRS} repairs: "
                         + "; ".join(errors[:MAX_ERRORS_SHOWN]), output_errors=errors[:MAX_ERRORS_SHOWN])
        self.repairs += 1
        return ("[agent-run: your final answer does not match the required JSON Schema:\n"
                + "\n".join(f"- {e}" for e in errors[:MAX_ERRORS_SHOWN])
                + "\nReply again with only the corrected JSON value.]")

    def errors(self, answer: str) -> list[str]:
        fenced = _FENCE.match(answer or "")
        try:
            value = json.loads(fenced.group(1) if fenced else answer)
        except json.JSONDecodeError as exc:
            return [f"not JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"]
        except RecursionError:  # the model's reply, nested past what the parser takes: the model can fix that
            return ["nested too deeply to read"]
        found = sorted(self.validator.iter_errors(value), key=lambda e: list(e.absolute_path))
        if not found:
            self.value = value
        return [f"{'/'.join(str(p) for p in e.absolute_path) or '(the value)'}: {e.message}" for e in found]


def recorded(started: dict[str, Any], home: Path) -> OutputSchema | None:
    """The --output-schema a run was given, for its resume or replay: the same file, unchanged (its text
    as sent is hashed in run_started.instructions). None when the run had none; UsageError when the file is
    gone or changed — the continued run could not check the answer it exists to produce."""
    entry = next((i for i in started.get("instructions") or [] if i.get("source") in ("--output-schema", FINDINGS)),
                 None)
    if entry is None:
        return None
    import hashlib

    if entry.get("source") == FINDINGS:  # built in: the same unless this version's differs from the recorded one
        schema = OutputSchema.findings()
        if hashlib.sha256(schema.instructions().encode("utf-8")).hexdigest() == entry.get("sha256"):
            return schema
        raise UsageError("the run was given --findings by a version of agent-run whose findings schema differs from "
                         "this one's: the answer of the continued run could not be checked (start a new run)")

    given = str(entry.get("path") or "")
    for candidate in (Path(given).expanduser(), home / given):
        try:
            schema = OutputSchema(str(candidate))
        except UsageError:
            continue
        if hashlib.sha256(schema.instructions().encode("utf-8")).hexdigest() == entry.get("sha256"):
            return schema
    raise UsageError(f"the run was given --output-schema {given}, which is not here unchanged: the answer of the "
                     "continued run could not be checked (restore the file, or start a new run)")


def _unresolved_refs(schema: Any) -> list[str]:
    """`$ref` values that are not a JSON pointer into the schema itself."""
    refs: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str):
                refs.append(ref)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema)
    return [r for r in refs if not _resolves(schema, r)]


def _resolves(schema: Any, ref: str) -> bool:
    if ref.startswith("#") and not ref.startswith("#/"):
        return True  # the root, or a plain-name anchor ($anchor): the validator resolves those itself
    return json_pointer(schema, ref) is not MISSING
