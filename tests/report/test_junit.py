"""runner.report.junit: every document validates against the vendored junit-10.xsd and reads back with junitparser."""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import xmlschema
from junitparser import Error, Failure, JUnitXml

from runner.core.outcome import Status
from runner.report.junit import JUnitCase, format_time, junit_xml, write_junit

SCHEMA = xmlschema.XMLSchema(str(Path(__file__).parent.parent / "fixtures" / "junit-10.xsd"))

FAILURES = {"failed", "denied", "doom_loop", "budget_exhausted", "interrupted", "land_failed"}
ERRORS = {"usage_error", "model_error"}

NASTY = "agent-run replay '/runs/x' --call c1 --approve \"shell:a && b\" <in >out\n--approve 'x&y'"


def summary(status: str = "success", **extra: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "run_id": "20240501T120304123456Z-abc123", "status": status, "exit_code": 0, "reason": None,
        "turns": 2, "tool_calls": 1, "denials": [],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "cached_tokens": 0, "total_tokens": 15,
                  "cost_usd": 0.0},
        "duration_s": 1.5, "model": "fake", "policy": "policies/ci.jsonc", "answer": "done",
        "run_dir": "/ws/.agent-run/runs/20240501T120304123456Z-abc123",
    }
    data.update(extra)
    return data


def denial(**extra: Any) -> dict[str, Any]:
    data = {"call_id": "call_1", "tool": "bash", "domain": "shell", "target": "rm -rf build", "decision": "deny",
            "rule": {"file": "policies/ci.jsonc", "index": 4, "line": 17, "domain": "shell", "pattern": "rm *",
                     "decision": "deny"},
            "approve": ["shell:rm -rf build"], "replay": "agent-run replay /runs/x --call call_1 --approve",
            "rerun": "agent-run run task.md --approve shell:rm -rf build"}
    data.update(extra)
    return data


def validated(text: str) -> ET.Element:
    """The document, after the schema has accepted it (raises with the reason otherwise)."""
    SCHEMA.validate(text)
    return ET.fromstring(text.encode("utf-8"))


def only_case(root: ET.Element) -> ET.Element:
    (case,) = root.iter("testcase")
    return case


def test_every_status_is_mapped() -> None:
    assert FAILURES | ERRORS | {"success"} == {s.value for s in Status}


@pytest.mark.parametrize("status", sorted(s.value for s in Status))
def test_one_case_per_status(status: str) -> None:
    reason = None if status == "success" else f"why it was {status}"
    root = validated(junit_xml([JUnitCase("tasks/t.md", "the task", summary(status, reason=reason))]))
    suite = root.find("testsuite")
    assert suite is not None
    case = only_case(root)
    outcome = [child for child in case if child.tag != "system-out"]
    if status == "success":
        assert outcome == []
        assert (suite.get("failures"), suite.get("errors")) == ("0", "0")
    else:
        (result,) = outcome
        assert result.tag == ("failure" if status in FAILURES else "error")
        assert result.get("type") == status
        assert result.get("message") == reason
        assert reason in (result.text or "")
        expected = ("1", "0") if status in FAILURES else ("0", "1")
        assert (suite.get("failures"), suite.get("errors")) == expected
    assert (suite.get("tests"), suite.get("skipped")) == ("1", "0")


def test_unknown_status_is_an_error_not_a_pass() -> None:
    case = only_case(validated(junit_xml([JUnitCase("t.md", "t", summary("exploded"))])))
    assert case.find("error") is not None and case.find("error").get("type") == "exploded"


def test_multiple_cases_counts_order_and_junitparser() -> None:
    cases = [
        JUnitCase("tasks/a.md", "alpha", summary("success", duration_s=1.0)),
        JUnitCase("tasks/b.md", "beta", summary("denied", reason="1 tool call(s) denied", denials=[denial()],
                                               duration_s=2.25)),
        JUnitCase("tasks/c.md", "gamma", summary("model_error", reason="HTTP 500 after 3 retries", duration_s=0.5)),
        JUnitCase("tasks/d.md", "delta", summary("doom_loop", reason="doom loop", duration_s=0.125)),
    ]
    text = junit_xml(cases, suite_name="nightly")
    root = validated(text)
    suite = root.find("testsuite")
    assert suite is not None
    assert {k: suite.get(k) for k in ("name", "tests", "failures", "errors", "skipped", "time")} == {
        "name": "nightly", "tests": "4", "failures": "2", "errors": "1", "skipped": "0", "time": "3.875"}
    assert [(c.get("classname"), c.get("name")) for c in root.iter("testcase")] == [
        ("tasks/a.md", "alpha"), ("tasks/b.md", "beta"), ("tasks/c.md", "gamma"), ("tasks/d.md", "delta")]

    parsed = JUnitXml.fromstring(text)
    (psuite,) = list(parsed)
    assert psuite.name == "nightly"
    assert (psuite.tests, psuite.failures, psuite.errors) == (4, 2, 1)
    pcases = list(psuite)
    assert [c.name for c in pcases] == ["alpha", "beta", "gamma", "delta"]
    assert [c.classname for c in pcases] == ["tasks/a.md", "tasks/b.md", "tasks/c.md", "tasks/d.md"]
    assert pcases[0].is_passed
    (failure,) = pcases[1].result
    assert isinstance(failure, Failure) and failure.type == "denied" and failure.message == "1 tool call(s) denied"
    (error,) = pcases[2].result
    assert isinstance(error, Error) and error.type == "model_error"
    assert "20240501T120304123456Z-abc123" in pcases[0].system_out


def test_denial_with_hostile_replay_command_survives_the_round_trip() -> None:
    hostile = denial(target='echo "<b>" & rm x', replay=NASTY, rerun=NASTY + " --again",
                     rule={"file": "p.jsonc", "index": 0, "line": 3, "domain": "shell", "pattern": 'echo "<*>"',
                           "decision": "deny"})
    reason = 'denied: "<b>" & friends'
    text = junit_xml([JUnitCase("tasks/<&>.md", 'title "with" <markup> & more', summary(
        "denied", reason=reason, denials=[hostile]))])
    root = validated(text)
    case = only_case(root)
    assert case.get("classname") == "tasks/<&>.md" and case.get("name") == 'title "with" <markup> & more'
    failure = case.find("failure")
    assert failure is not None and failure.get("message") == reason
    body = failure.text or ""
    assert f"replay: {NASTY}" in body and f"rerun: {NASTY} --again" in body
    assert 'echo "<b>" & rm x' in body and 'deny `echo "<*>"` (p.jsonc:3, rule 0)' in body
    out = case.find("system-out")
    assert out is not None and json.loads(out.text.split("\n\n", 1)[1])["denials"][0]["replay"] == NASTY
    assert "<b>" not in text  # escaped, not markup


def test_failure_text_lists_reason_denials_loop_budget_and_check() -> None:
    data = summary("budget_exhausted", exit_code=5, reason="token budget exceeded", denials=[denial()],
                   loop={"detector": "repeat", "count": 4, "threshold": 3, "call": {"tool": "read", "path": "a"}},
                   budget={"name": "max_tokens", "limit": 1000, "used": 1200},
                   check={"command": "pytest -q", "exit_code": 1, "ok": False})
    body = only_case(validated(junit_xml([JUnitCase("t.md", "t", data)]))).find("failure").text or ""
    assert "reason: token budget exceeded" in body
    assert "bash shell: rm -rf build" in body
    assert "rule: deny `rm *` (policies/ci.jsonc:17, rule 4)" in body
    assert "approve: shell:rm -rf build" in body
    assert "replay: agent-run replay /runs/x --call call_1 --approve" in body
    assert "rerun: agent-run run task.md --approve shell:rm -rf build" in body
    assert 'loop: detector=repeat, count=4, threshold=3, call={"path": "a", "tool": "read"}' in body
    assert "budget: name=max_tokens, limit=1000, used=1200" in body
    assert "check failed: pytest -q (exit code 1)" in body


def test_denial_without_a_rule_says_so() -> None:
    data = summary("denied", denials=[denial(rule=None, decision="ask", replay=None, rerun=None)])
    body = only_case(validated(junit_xml([JUnitCase("t.md", "t", data)]))).find("failure").text or ""
    assert "no rule matched" in body and "(ask, call call_1)" in body and "replay:" not in body


def test_characters_illegal_in_xml_are_stripped_everywhere() -> None:
    dirty = "bad\x00 byte\x08 and\x0b\x0c esc\x1b[31m \ufffe\ud800 tab\tok"
    data = summary("failed", reason=dirty, answer=dirty, denials=[denial(target=dirty, replay=dirty)])
    text = junit_xml([JUnitCase("t\x01.md", "title\x02", data)], suite_name="suite\x03")
    for ch in "\x00\x01\x02\x03\x08\x0b\x0c\x1b\ufffe\ud800":
        assert ch not in text
    root = validated(text)
    case = only_case(root)
    assert (case.get("classname"), case.get("name")) == ("t.md", "title")
    assert root.find("testsuite").get("name") == "suite"
    failure = case.find("failure")
    assert failure.get("message") == "bad byte and esc[31m  tab\tok"
    assert "- bash shell: bad byte and esc[31m  tab\tok (deny, call call_1)" in failure.text
    assert "replay: bad byte and esc[31m  tab\tok" in failure.text


@pytest.mark.parametrize(("seconds", "expected"), [
    (1.23456, "1.235"), (0.0004, "0.000"), (2, "2.000"), (12345.6789, "12345.679"), (0, "0.000"),
    (None, "0.000"), ("n/a", "0.000"), (-1.5, "0.000"), (float("nan"), "0.000"), (float("inf"), "0.000"),
])
def test_time_has_three_decimals(seconds: object, expected: str) -> None:
    assert format_time(seconds) == expected
    root = validated(junit_xml([JUnitCase("t.md", "t", summary(duration_s=seconds))]))
    assert only_case(root).get("time") == expected
    assert root.find("testsuite").get("time") == expected


def test_suite_time_is_the_sum_with_three_decimals() -> None:
    cases = [JUnitCase(f"{i}.md", str(i), summary(duration_s=0.1)) for i in range(3)]  # 0.1 * 3 != 0.3 in floats
    root = validated(junit_xml(cases))
    assert root.find("testsuite").get("time") == "0.300" and root.get("time") == "0.300"


def test_suite_name_default_and_timestamp_from_earliest_run_id() -> None:
    cases = [JUnitCase("a.md", "a", summary(run_id="20240501T120304123456Z-aaaaaa")),
             JUnitCase("b.md", "b", summary(run_id="20240430T235959000001Z-bbbbbb")),
             JUnitCase("c.md", "c", {"status": "usage_error", "exit_code": 2, "reason": "no task file"})]
    root = validated(junit_xml(cases))
    suite = root.find("testsuite")
    assert suite.get("name") == "agent-run" and root.get("name") == "agent-run"
    assert suite.get("timestamp") == "2024-04-30T23:59:59"


def test_explicit_timestamp_is_written_in_utc() -> None:
    from datetime import timedelta, timezone

    when = datetime(2024, 5, 1, 14, 0, 0, tzinfo=timezone(timedelta(hours=2)))
    root = validated(junit_xml([JUnitCase("t.md", "t", summary())], timestamp=when))
    assert root.find("testsuite").get("timestamp") == "2024-05-01T12:00:00"


def test_timestamp_without_run_ids_is_now() -> None:
    before = datetime.now(UTC).replace(microsecond=0, tzinfo=None)
    root = validated(junit_xml([JUnitCase("t.md", "t", {"status": "usage_error", "reason": "x"})]))
    stamp = datetime.strptime(root.find("testsuite").get("timestamp"), "%Y-%m-%dT%H:%M:%S")
    assert before <= stamp <= datetime.now(UTC).replace(tzinfo=None)


def test_system_out_holds_run_dir_and_pretty_summary() -> None:
    data = summary("success", answer="ünïcode ✓")
    out = only_case(validated(junit_xml([JUnitCase("t.md", "t", data)]))).find("system-out").text or ""
    head, body = out.split("\n\n", 1)
    assert head == f"run dir: {data['run_dir']}"
    assert json.loads(body) == data
    assert body.startswith("{\n  ") and "ünïcode ✓" in body


def test_no_cases_is_a_valid_empty_suite() -> None:
    suite = validated(junit_xml([])).find("testsuite")
    assert {k: suite.get(k) for k in ("tests", "failures", "errors", "time")} == {
        "tests": "0", "failures": "0", "errors": "0", "time": "0.000"}


def test_document_declares_utf8_and_encodes_as_such() -> None:
    text = junit_xml([JUnitCase("t.md", "ü", summary())])
    assert text.startswith('<?xml version="1.0" encoding="UTF-8"?>\n')
    assert only_case(ET.fromstring(text.encode("utf-8"))).get("name") == "ü"


def test_write_junit_replaces_atomically(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "reports" / "junit.xml"  # the parent does not exist yet
    seen: list[tuple[str, str, bool, str]] = []
    real_replace = os.replace

    def spy(src: str, dst: str) -> None:
        seen.append((str(Path(src).parent), str(dst), Path(dst).exists(), Path(src).read_text(encoding="utf-8")))
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", spy)
    cases = [JUnitCase("t.md", "t", summary("denied", reason="no", denials=[denial()]))]
    assert write_junit(target, cases) == target
    ((src_dir, dst, existed, staged),) = seen
    assert src_dir == str(target.parent) and dst == str(target) and not existed
    assert staged == target.read_text(encoding="utf-8") == junit_xml(cases)
    validated(target.read_text(encoding="utf-8"))
    assert sorted(p.name for p in target.parent.iterdir()) == ["junit.xml"]  # no temp file left


def test_write_junit_failure_keeps_the_old_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "junit.xml"
    write_junit(target, [JUnitCase("old.md", "old", summary())])
    before = target.read_text(encoding="utf-8")

    def broken(src: str, dst: str) -> None:
        raise OSError("disk on fire")

    monkeypatch.setattr(os, "replace", broken)
    with pytest.raises(OSError, match="disk on fire"):
        write_junit(str(target), [JUnitCase("new.md", "new", summary("failed"))])
    assert target.read_text(encoding="utf-8") == before
    assert [p.name for p in tmp_path.iterdir()] == ["junit.xml"]


@pytest.mark.parametrize("bad", [
    '<testsuites><testsuite name="s" tests="0" failures="0" errors="0" disabled="0"/></testsuites>',
    '<testsuites><testsuite name="s" tests="0" failures="0" errors="0" time="1.2345"/></testsuites>',
    '<testsuites><testsuite name="s" tests="1" failures="0" errors="1"><testcase name="t"><errors/></testcase>'
    '</testsuite></testsuites>',
])
def test_vendored_schema_is_strict_where_it_matters(bad: str) -> None:
    assert not SCHEMA.is_valid(bad)
