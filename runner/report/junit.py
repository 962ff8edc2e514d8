"""JUnit XML for CI test-report views: one <testcase> per task, built from that run's summary.json.

Written with xml.etree.ElementTree, not the `junit-xml` package: junit-xml 1.9 (unmaintained since 2020) always
emits `disabled` on <testsuites> and <testsuite> (junit-10.xsd rejects it) and an unrounded summed suite time
(`time="3.73456"`, which the schema's SUREFIRE_TIME pattern rejects); fixing either means rewriting its output.

Status mapping: `success` passes; failed, denied, doom_loop, budget_exhausted, interrupted and land_failed are a
<failure> (the task did not get done); usage_error and model_error are an <error> (the run could not do the task); any
other status is an <error> too, so that nothing unknown passes. `type` is the status, `message` the reason.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from math import isfinite
from pathlib import Path
from typing import Any

from runner.core.outcome import Status
from runner.record.rundir import write_atomic

FAILURE_STATUSES = frozenset(s.value for s in (Status.FAILED, Status.DENIED, Status.DOOM_LOOP,
                                                 Status.BUDGET_EXHAUSTED, Status.INTERRUPTED,
                                                 Status.LAND_FAILED))
ERROR_STATUSES = frozenset(s.value for s in (Status.USAGE_ERROR, Status.MODEL_ERROR))

# Everything outside XML 1.0's Char production: C0 controls but tab/LF/CR, lone surrogates, U+FFFE/U+FFFF.
_ILLEGAL_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_RUN_ID_TIME = re.compile(r"(\d{8}T\d{6})\d{6}Z")


@dataclass(frozen=True)
class JUnitCase:
    task_file: str  # -> testcase@classname
    title: str  # -> testcase@name
    summary: dict[str, Any]  # the run's summary.json


def clean(text: object) -> str:
    """`text` as a string that XML 1.0 can carry: characters it cannot represent at all are dropped."""
    return _ILLEGAL_XML.sub("", text if isinstance(text, str) else str(text))


def format_time(seconds: object) -> str:
    """Seconds with exactly three decimals; anything missing, negative or not a finite number is 0.000."""
    try:
        value = float(seconds)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return "0.000"
    return f"{value:.3f}" if isfinite(value) and value > 0 else "0.000"


def junit_xml(cases: list[JUnitCase], suite_name: str = "agent-run", *, timestamp: datetime | None = None) -> str:
    """One <testsuite> in a <testsuites> root, one <testcase> per case, in order.

    `timestamp` (the suite's start, written in UTC) defaults to the earliest start time encoded in the cases'
    run ids, so the same summaries give the same document; only when no case has a run id is it the current time.
    A naive `timestamp` is taken to be UTC already.
    """
    kinds = [_kind(case.summary) for case in cases]
    total = sum(_seconds(case.summary.get("duration_s")) for case in cases)
    counts = {"tests": str(len(cases)), "failures": str(kinds.count("failure")), "errors": str(kinds.count("error"))}
    root = ET.Element("testsuites", {"name": clean(suite_name), **counts, "time": format_time(total)})
    suite = ET.SubElement(root, "testsuite", {
        "name": clean(suite_name), **counts, "skipped": "0", "time": format_time(total),
        "timestamp": _timestamp(timestamp, cases),
    })
    for case, kind in zip(cases, kinds, strict=True):
        _testcase(suite, case, kind)
    ET.indent(root)
    # The declaration is written by hand: ElementTree's, with encoding="unicode", names the locale's encoding.
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def write_junit(path: str | Path, cases: list[JUnitCase], suite_name: str = "agent-run") -> Path:
    """Write `junit_xml(cases)` to `path` atomically (temp file in the same directory, then os.replace)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(target, junit_xml(cases, suite_name))
    return target


def _testcase(suite: ET.Element, case: JUnitCase, kind: str | None) -> None:
    summary = case.summary
    name = case.title or case.task_file
    element = ET.SubElement(suite, "testcase", {"classname": clean(case.task_file), "name": clean(name),
                                                "time": format_time(summary.get("duration_s"))})
    if kind is not None:
        status = str(summary.get("status") or "unknown")
        result = ET.SubElement(element, kind, {"message": clean(summary.get("reason") or status),
                                               "type": clean(status)})
        result.text = clean(details(summary))
    out = f"run dir: {summary.get('run_dir') or '-'}\n\n" + json.dumps(summary, indent=2, sort_keys=True,
                                                                        ensure_ascii=False, default=str)
    ET.SubElement(element, "system-out").text = clean(out)


def _kind(summary: Mapping[str, Any]) -> str | None:
    status = summary.get("status")
    if status == Status.SUCCESS.value:
        return None
    return "failure" if status in FAILURE_STATUSES else "error"


def details(summary: Mapping[str, Any]) -> str:
    """What a reader of a red test needs, one fact a line: reason, denials with their fixes, loop, budget, check
    (with a failed check's output tail)."""
    lines = [f"status: {summary.get('status')} (exit code {summary.get('exit_code')})"]
    if summary.get("reason"):
        lines.append(f"reason: {summary['reason']}")
    denials = summary.get("denials") or []
    if denials:
        lines.append(f"denials ({len(denials)}):")
        for denial in denials:
            lines.extend(_denial(denial))
    if loop := summary.get("loop"):
        lines.append("loop: " + _figures(loop, ("detector", "count", "threshold", "call")))
    if budget := summary.get("budget"):
        lines.append("budget: " + _figures(budget, ("name", "limit", "used")))
    if check := summary.get("check"):
        verdict = "passed" if check.get("ok") else "failed"
        lines.append(f"check {verdict}: {check.get('command')} (exit code {check.get('exit_code')})")
        if not check.get("ok") and check.get("output_tail"):
            tail = str(check["output_tail"]).splitlines()
            lines += ["check output (its last lines):", *(f"  {line}" for line in tail)]
        if not check.get("ok") and check.get("output_path"):
            lines.append(f"check output, whole: {check['output_path']} (in the run dir)")
    if isinstance(land := summary.get("land"), Mapping):
        pr = land.get("pull_request") or {}
        lines.append("land: " + ", ".join(f"{k} {v}" for k, v in (
            ("mode", land.get("mode")), ("branch", land.get("branch")), ("commit", land.get("commit")),
            ("pull request", pr.get("url") if isinstance(pr, Mapping) else None), ("refused", land.get("refused")),
            ("reason", land.get("reason"))) if v))
    if summary.get("run_dir"):
        lines.append(f"run dir: {summary['run_dir']}")
    return "\n".join(lines)


def _denial(denial: Mapping[str, Any]) -> list[str]:
    lines = [f"- {denial.get('tool')} {denial.get('domain')}: {denial.get('target')} "
             f"({denial.get('decision')}, call {denial.get('call_id')})",
             f"  rule: {_rule(denial.get('rule'))}"]
    for approval in denial.get("approve") or []:
        lines.append(f"  approve: {approval}")
    for key in ("replay", "rerun"):
        if denial.get(key):
            lines.append(f"  {key}: {denial[key]}")
    return lines


def _rule(rule: Mapping[str, Any] | None) -> str:
    if not rule:
        return "no rule matched (the mode's default)"
    where = f"{rule.get('file')}:{rule.get('line')}" if rule.get("line") else str(rule.get("file"))
    return f"{rule.get('decision')} `{rule.get('pattern')}` ({where}, rule {rule.get('index')})"


def _figures(data: Mapping[str, Any], first: tuple[str, ...]) -> str:
    order = [k for k in first if k in data] + sorted(k for k in data if k not in first)
    return ", ".join(f"{k}={_value(data[k])}" for k in order)


def _value(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _seconds(value: object) -> float:
    return float(format_time(value))


def _timestamp(given: datetime | None, cases: Iterable[JUnitCase]) -> str:
    if given is None:
        starts = [datetime.strptime(m.group(1), "%Y%m%dT%H%M%S").replace(tzinfo=UTC)
                  for case in cases if (m := _RUN_ID_TIME.match(str(case.summary.get("run_id") or "")))]
        given = min(starts) if starts else datetime.now(UTC)
    if given.tzinfo is not None:
        given = given.astimezone(UTC)
    return given.strftime("%Y-%m-%dT%H:%M:%S")
