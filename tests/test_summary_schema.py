"""runner/schemas/summary.schema.json and result.schema.json: valid schemas whose fixed values are the code's,
that refuse a key nobody declared, and a result schema that validates alone (its `$ref` to the summary finds the
copy it carries, for the `referencing` library and for check-jsonschema alike, with nothing fetched). Every test
run's summary.json is checked against the summary schema by the autouse fixture in tests/conftest.py."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator
from referencing import Registry, Resource

from runner.core.outcome import Status
from runner.policy.domains import DOMAINS
from runner.record.integrity import SEALED_FILES
from runner.report.findings import SEVERITIES
from runner.report.summary import SummaryBuilder
from runner.tools.base import ERROR_TYPES
from runner.tools.todo import STATUSES
from tests.fakes.summary_schema import load_schema, schema_error

SUMMARY = load_schema("summary")
RESULT = load_schema("result")
RUN_ID = "20250102T030405123456Z-0a1b2c"
SHA = "0" * 64


def sealed_summary(**more: object) -> dict[str, object]:
    """What the fold and the recorder write for a run that did nothing, sealed."""
    data = SummaryBuilder(RUN_ID, "gpt-4o-mini", "default").build(status="success", exit_code=0, reason=None,
                                                                 duration_s=0.1, answer="done")
    return {**data, "run_dir": f"/tmp/runs/{RUN_ID}", "signal": None, "show": "agent-run runs show X --transcript",
            "integrity": {"events_head": SHA, "files": {"task.md": SHA}, "keyed": False, "sha256": SHA}, **more}


def test_both_schemas_are_valid_draft_2020_12_and_keep_their_ids():
    for schema in (SUMMARY, RESULT):
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        Draft202012Validator.check_schema(schema)
    assert SUMMARY["$id"] == "https://agent-run.dev/summary.schema.json"
    assert RESULT["$id"] == "https://agent-run.dev/result.schema.json"
    assert RESULT["allOf"][0] == {"$ref": "summary.schema.json"}
    assert RESULT["$defs"]["summary"] == SUMMARY  # the copy docgen keeps (tests/test_generated_docs.py)


def test_fixed_values_are_the_codes():
    props, defs = SUMMARY["properties"], SUMMARY["$defs"]
    assert props["status"]["enum"] == [s.value for s in Status] + ["skipped"]
    assert defs["domain"]["enum"] == list(DOMAINS)
    assert defs["error_type"]["enum"] == list(ERROR_TYPES)
    assert props["integrity"]["properties"]["files"]["propertyNames"]["enum"] == list(SEALED_FILES)
    assert list(props["findings"]["properties"]["by_severity"]["properties"]) == list(SEVERITIES)
    assert defs["todos"]["items"]["properties"]["status"]["enum"] == list(STATUSES)


def test_the_fold_writes_what_a_sealed_summary_requires_and_nothing_undeclared():
    data = sealed_summary()
    assert schema_error("summary", data) is None
    assert set(data) == set(SUMMARY["then"]["required"])
    assert schema_error("summary", {**data, "surprise": 1}) == \
        "(top): Additional properties are not allowed ('surprise' was unexpected)"
    missing = {k: v for k, v in data.items() if k != "show"}
    assert schema_error("summary", missing) == "(top): 'show' is a required property"


def test_the_smaller_forms_a_summary_takes():
    """A usage error before any run directory (printed only), and the minimal summary written when building
    the real one failed (runner/engine/recorder.py `_last_resort`)."""
    assert schema_error("summary", {"status": "usage_error", "exit_code": 2, "reason": "no task"}) is None
    last_resort = {"type": "result", "run_id": RUN_ID, "status": "failed", "exit_code": 1, "reason": "broke",
                   "answer": None, "usage": {}, "denials": [], "run_dir": "/tmp/x"}
    assert schema_error("summary", last_resort) is None
    assert schema_error("summary", {"status": "success", "exit_code": 0}) == "(top): 'reason' is a required property"


@pytest.mark.parametrize("value, problem", [
    ({"status": "success"}, None),
    ({"status": "finished"}, "status: 'finished' is not one of"),
    ({"budget": {"name": "max_turns", "limit": 3, "used": 3}}, None),
    ({"budget": {"name": "max_steps", "limit": 3}}, "budget/name: 'max_steps' is not one of"),
    ({"denials": [{"call_id": "c"}]}, "denials/0: 'tool' is a required property"),
    ({"usage": {"prompt_tokens": -1, "completion_tokens": 0, "cached_tokens": 0}},
     "usage/prompt_tokens: -1 is less than the minimum of 0"),
    ({"usage": {"prompt_tokens": 1}}, "usage: 'completion_tokens' is a required property"),
    ({"output": [1, {"any": "value"}]}, None),
])
def test_values_are_typed(value, problem):
    found = schema_error("summary", sealed_summary(**value))
    assert (found is None) if problem is None else (found or "").startswith(problem), found


def test_a_result_line_is_a_summary_plus_its_type():
    line = {**sealed_summary(), "type": "result"}
    assert schema_error("result", line) is None
    assert schema_error("result", sealed_summary()) == "(top): 'type' is a required property"
    assert (schema_error("result", {**line, "surprise": 1}) or "").endswith("('surprise' was unexpected)")
    usage_error = {"run_id": None, "answer": None, "usage": {}, "denials": [], "status": "usage_error",
                   "exit_code": 2, "reason": "no task", "type": "result"}
    assert schema_error("result", usage_error) is None
    assert schema_error("result", {**usage_error, "run_id": "not-a-run-id"}) is not None


def test_the_result_schema_resolves_its_summary_with_referencing():
    """Registered beside the summary schema, or alone (its copy under the summary's `$id`): the same answers."""
    good = {**sealed_summary(), "type": "result"}
    bad = {**good, "turns": "two"}
    both = Registry().with_resources([(s["$id"], Resource.from_contents(s)) for s in (SUMMARY, RESULT)])
    alone = Registry().with_resource(RESULT["$id"], Resource.from_contents(RESULT))
    for registry in (both, alone):
        validator = Draft202012Validator({"$ref": RESULT["$id"]}, registry=registry)
        assert list(validator.iter_errors(good)) == []
        assert [e.message for e in validator.iter_errors(bad)] == ["'two' is not of type 'integer'"]


def test_check_jsonschema_validates_a_result_line_with_the_shipped_file_alone(tmp_path):
    """What a workflow would run: nothing to fetch (the summary's copy is in the file), offline."""
    schema = Path(__file__).resolve().parents[1] / "runner" / "schemas" / "result.schema.json"
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text(json.dumps({**sealed_summary(), "type": "result"}), encoding="utf-8")
    bad.write_text(json.dumps({**sealed_summary(), "type": "result", "surprise": 1}), encoding="utf-8")
    run = [sys.executable, "-m", "check_jsonschema", "--no-cache", "--schemafile", str(schema)]
    ok = subprocess.run([*run, str(good)], capture_output=True, text=True, timeout=300)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    refused = subprocess.run([*run, str(bad)], capture_output=True, text=True, timeout=300)
    assert refused.returncode == 1 and "'surprise' was unexpected" in refused.stdout, refused.stdout + refused.stderr
