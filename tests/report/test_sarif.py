"""runner/report/sarif.py and findings.py: the SARIF log is valid against the official SARIF 2.1.0 schema (vendored
in tests/fixtures/sarif/), an alert keeps its fingerprint when its line moves, and paths outside the workspace never
become locations."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from runner.report.findings import normalise, normalised_path
from runner.report.sarif import FINGERPRINT, sarif_log

SCHEMA = json.loads((Path(__file__).parents[1] / "fixtures" / "sarif" / "sarif-schema-2.1.0.json").read_text())


def valid(log: dict) -> None:
    jsonschema.Draft4Validator(SCHEMA).validate(log)


FINDINGS = [
    {"path": "src/a.py", "line": 3, "end_line": 5, "severity": "error", "title": "SQL  built from input",
     "message": "use parameters", "rule": "sql-injection", "suggestion": "cur.execute(q, (x,))"},
    {"path": "b.py", "line": 1, "severity": "note", "title": "naming", "message": ""},
]
DENIAL = {"call_id": "call_1_0", "tool": "bash", "target": "shell:curl x", "decision": "deny",
          "rule": {"pattern": "shell:curl *", "file": "p.jsonc", "line": 4}, "replay": "agent-run replay r --call c"}


def test_a_log_of_findings_and_denials_is_valid_sarif_2_1_0():
    log = sarif_log(FINDINGS, [DENIAL], version="0.2.0", category="review", task_file="task.md",
                    policy_ref=lambda f: f if f == "p.jsonc" else None)
    valid(log)
    run = log["runs"][0]
    assert run["automationDetails"]["id"] == "agent-run/review/"
    first, note, denial = run["results"]
    assert first["ruleId"] == "sql-injection" and first["level"] == "error"
    assert first["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": "src/a.py", "uriBaseId": "%SRCROOT%"}, "region": {"startLine": 3, "endLine": 5}}
    [replacement] = first["fixes"][0]["artifactChanges"][0]["replacements"]
    assert replacement["insertedContent"]["text"] == "cur.execute(q, (x,))"
    assert note["ruleId"] == "agent-run/note" and "primaryLocationLineHash" not in note["partialFingerprints"]
    assert denial["ruleId"] == "agent-run/denial"
    assert denial["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "p.jsonc"
    assert denial["locations"][0]["physicalLocation"]["region"]["startLine"] == 4
    assert {r["id"] for r in run["tool"]["driver"]["rules"]} == {"sql-injection", "agent-run/note", "agent-run/denial"}


def test_the_fingerprint_survives_a_moved_line_and_respaced_title_but_not_another_file():
    def fp(**change):
        return sarif_log([{**FINDINGS[0], **change}], [], version="x", category="t", task_file=None,
                         policy_ref=lambda f: None)["runs"][0]["results"][0]["partialFingerprints"][FINGERPRINT]

    assert fp() == fp(line=30, end_line=31) == fp(title="sql built   from INPUT")
    assert fp() != fp(path="src/b.py") != fp(rule="other")


def test_a_denial_of_a_shipped_policy_is_located_at_the_task_or_nowhere():
    shipped = {**DENIAL, "rule": {"pattern": "shell:curl *", "file": "default", "line": 9}}
    at_task = sarif_log([], [shipped], version="x", category="t", task_file="task.md", policy_ref=lambda f: None)
    nowhere = sarif_log([], [shipped], version="x", category="t", task_file=None, policy_ref=lambda f: None)
    valid(at_task)
    valid(nowhere)
    loc = at_task["runs"][0]["results"][0]["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"]["uri"] == "task.md" and loc["region"]["startLine"] == 1
    assert "locations" not in nowhere["runs"][0]["results"][0]


@pytest.mark.parametrize(("path", "expected"), [
    ("src/a.py", "src/a.py"), ("./src/../a.py", "a.py"), ("/ws/src/a.py", "src/a.py"), ("src\\a.py", "src/a.py"),
    ("../a.py", None), ("/etc/passwd", None), ("/wsx/a.py", None), ("/ws", None), (".", None), ("", None),
    ("https://x/a.py", None), ("a\x00b", None),
])
def test_only_paths_inside_the_workspace_are_kept(path, expected):
    assert normalised_path(path, "/ws") == expected


def test_normalise_orders_by_severity_and_drops_a_backwards_end_line():
    value = {"summary": "s", "findings": [
        {"path": "a", "line": 9, "end_line": 2, "severity": "note", "title": "n", "message": ""},
        {"path": "../out", "line": 1, "severity": "error", "title": "x", "message": ""},
        {"path": "b", "line": 1, "severity": "warning", "title": "w", "message": ""}]}
    kept, dropped = normalise(value, "/ws")
    assert [f["severity"] for f in kept["findings"]] == ["warning", "note"] and dropped == ["../out"]
    assert "end_line" not in kept["findings"][1]


def test_a_path_with_a_space_or_hash_is_a_percent_encoded_uri():
    log = sarif_log([{**FINDINGS[1], "path": "docs/my notes#1.md"}], [], version="x", category="t", task_file=None,
                    policy_ref=lambda f: None)
    valid(log)
    location = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert location["uri"] == "docs/my%20notes%231.md"
