"""SARIF 2.1.0 (OASIS) for code scanning: a pure function from findings (runner/report/findings.py) and,
optionally, the run's denials to one SARIF log, uploadable with `github/codeql-action/upload-sarif`.

Written by hand rather than through a SARIF object-model package: the output is one small document, the packages
on the index are either unmaintained (sarif-om, 2019) or thin mirrors of the schema, and what guarantees the
shape is the test that validates every log against the official schema (tests/fixtures/sarif/).

What keeps an alert the same alert from one run to the next: `partialFingerprints["agentRunFinding/v1"]` =
sha256(ruleId|path|normalised title) (the line may move; `primaryLocationLineHash` is left to the upload, which
computes it), locations relative to `%SRCROOT%`, and `automationDetails.id` = `agent-run/<task>/`, so uploads of
other tools, and of other agent-run tasks, are categories of their own.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any
from urllib.parse import quote

SARIF_FILE = "findings.sarif"
SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
FINGERPRINT = "agentRunFinding/v1"
DENIAL_RULE = "agent-run/denial"
_SPACE = re.compile(r"\s+")
_SLUG = re.compile(r"[^A-Za-z0-9._-]+")


def rule_id(finding: Mapping[str, Any]) -> str:
    return str(finding.get("rule") or f"agent-run/{finding['severity']}")


def fingerprint(rule: str, path: str, title: str) -> str:
    normal = _SPACE.sub(" ", title).strip().lower()
    return hashlib.sha256(f"{rule}|{path}|{normal}".encode()).hexdigest()


def sarif_log(findings: Iterable[Mapping[str, Any]], denials: Iterable[Mapping[str, Any]], *, version: str,
              category: str, task_file: str | None, policy_ref: Callable[[str], str | None]) -> dict[str, Any]:
    """One run of results: the findings, then the denials (`policy_ref` gives a denying rule's file as a workspace
    path, None when it is not one; such a denial is located at the task file, else nowhere)."""
    results = [_finding(f) for f in findings]
    results += [_denial(d, task_file, policy_ref) for d in denials]
    rules: dict[str, str] = {}
    for f in findings:
        rules.setdefault(rule_id(f), str(f.get("title", "")))
    if any(r["ruleId"] == DENIAL_RULE for r in results):
        rules[DENIAL_RULE] = "A tool call the permission policy denied"
    return {
        "$schema": SCHEMA_URI, "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "agent-run", "version": version, "informationUri":
                                "https://github.com/owner/agent-run",
                                "rules": [{"id": rid, "shortDescription": {"text": text or rid}}
                                          for rid, text in rules.items()]}},
            "automationDetails": {"id": f"agent-run/{_SLUG.sub('-', category).strip('-') or 'task'}/"},
            "columnKind": "unicodeCodePoints",
            "results": results,
        }],
    }


def _uri(path: str) -> str:
    """A workspace-relative path as a relative URI reference (a space or `#` in a name percent-encoded)."""
    return quote(path, safe="/")


def _finding(f: Mapping[str, Any]) -> dict[str, Any]:
    rule = rule_id(f)
    region: dict[str, Any] = {"startLine": f["line"]}
    if f.get("end_line"):
        region["endLine"] = f["end_line"]
    location = {"artifactLocation": {"uri": _uri(f["path"]), "uriBaseId": "%SRCROOT%"}, "region": region}
    text = str(f["title"]) + (f"\n\n{f['message']}" if f.get("message") else "")
    result: dict[str, Any] = {
        "ruleId": rule, "level": f["severity"], "message": {"text": text},
        "locations": [{"physicalLocation": location}],
        "partialFingerprints": {FINGERPRINT: fingerprint(rule, f["path"], str(f["title"]))},
    }
    if f.get("suggestion") is not None:
        result["fixes"] = [{"description": {"text": "suggested change"}, "artifactChanges": [{
            "artifactLocation": location["artifactLocation"],
            "replacements": [{"deletedRegion": dict(region), "insertedContent": {"text": f["suggestion"]}}]}]}]
    return result


def _denial(d: Mapping[str, Any], task_file: str | None, policy_ref: Callable[[str], str | None]) -> dict[str, Any]:
    rule: Mapping[str, Any] = d["rule"] if isinstance(d.get("rule"), Mapping) else {}
    where = policy_ref(str(rule.get("file") or "")) if rule.get("file") else None
    line = rule.get("line") if where else None
    place = where or task_file
    text = f"{d.get('tool', '?')} on {d.get('target', '?')} was denied"
    text += f" by rule {rule.get('pattern')}" if rule.get("pattern") else " (no rule allows it; headless ask is a deny)"
    if d.get("replay"):
        text += f". Approve and run it: {d['replay']}"
    result: dict[str, Any] = {
        "ruleId": DENIAL_RULE, "level": "error", "message": {"text": text},
        "partialFingerprints": {FINGERPRINT: fingerprint(DENIAL_RULE, str(d.get("tool", "")), str(d.get("target")))},
    }
    if place:
        result["locations"] = [{"physicalLocation": {"artifactLocation": {"uri": _uri(place), "uriBaseId": "%SRCROOT%"},
                                                     "region": {"startLine": int(line) if line else 1}}}]
    return result
