"""runner/schemas/events.schema.json: a valid schema that says exactly what runner/core/events.py emits."""

from __future__ import annotations

import dataclasses
import inspect
import json
import types
import typing
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from runner.core import events as events_module
from runner.core.events import (
    AnswerRefused,
    CheckFinished,
    CheckStarted,
    Compaction,
    Event,
    GuardWarning,
    HookFinished,
    HookStarted,
    Land,
    McpServerFailed,
    McpServerStarted,
    ModelFallback,
    ModelRequest,
    ModelResponse,
    ModelRetry,
    NetworkRequest,
    PermissionDecision,
    RunFinished,
    RunInterrupted,
    RunStarted,
    RunWarning,
    SubagentFinished,
    SubagentStarted,
    ToolCall,
    ToolResult,
    UserMessage,
    tag,
)
from runner.core.jsonutil import sha256_text
from runner.core.outcome import EXIT_CODES, Status
from runner.model.base import assistant_message, usage_dict
from runner.policy.domains import DOMAINS
from runner.policy.model import Decision
from runner.record.rundir import EventLog, create_run_dir, utc_now
from runner.tools.base import ERROR_CLASSES, ERROR_TYPES
from tests.fakes.event_schema import event_error, load_schema, validate_events_file

SCHEMA = load_schema()
COMMON = {"seq", "ts", "run_id", "type", "prev", "agent"}
EVENTS = sorted((cls for _, cls in inspect.getmembers(events_module, inspect.isclass)
                 if issubclass(cls, Event) and cls is not Event), key=lambda cls: cls.__name__)
RUN_ID = "20250102T030405123456Z-0a1b2c"
CHILD = {"id": "a1", "name": "reviewer", "parent_call_id": "call_1", "depth": 1}
SHA = sha256_text("x")


def definition(type_: str) -> dict[str, Any]:
    return SCHEMA["$defs"][type_]


def record(event: Event, seq: int = 1) -> dict[str, Any]:
    return json.loads(json.dumps({"seq": seq, "ts": utc_now(), "run_id": RUN_ID, "type": event.type,
                                  "prev": "0" * 64, "agent": event.agent, **event.fields()}))


def test_schema_is_valid_draft_2020_12():
    assert SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(SCHEMA)


def test_every_event_type_is_dispatched():
    types_ = {cls.type for cls in EVENTS}
    assert len(types_) == len(EVENTS) == 25
    assert set(SCHEMA["properties"]["type"]["enum"]) == types_
    dispatched = {branch["if"]["properties"]["type"]["const"]: branch["then"]["$ref"] for branch in SCHEMA["allOf"]}
    assert dispatched == {t: f"#/$defs/{t}" for t in types_}


def _json_types(annotation: Any) -> set[str]:
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        return set().union(*(_json_types(a) for a in typing.get_args(annotation)))
    origin = typing.get_origin(annotation) or annotation
    return {type(None): {"null"}, str: {"string"}, int: {"integer"}, float: {"number"}, bool: {"boolean"},
            dict: {"object"}, list: {"array"}}[origin]


@pytest.mark.parametrize("cls", EVENTS, ids=lambda cls: cls.type)
def test_schema_matches_the_dataclass(cls):
    """Every field is a property of the event's schema and every property a field (or a common one)."""
    schema = definition(cls.type)
    fields = {cls.renamed.get(f.name, f.name) for f in dataclasses.fields(cls)}
    assert set(schema["properties"]) - COMMON == fields
    assert set(schema["required"]) == set(schema["properties"]), "every field is always written"
    assert schema["additionalProperties"] is False
    assert schema["properties"]["type"] == {"const": cls.type}
    hints = {cls.renamed.get(k, k): v for k, v in typing.get_type_hints(cls).items()}
    for name in fields:
        declared = schema["properties"][name].get("type") or definition(
            schema["properties"][name]["$ref"].split("/")[-1])["type"]
        assert ({declared} if isinstance(declared, str) else set(declared)) == _json_types(hints[name]), name


def test_enums_follow_the_code():
    assert definition("tool_result")["properties"]["error_type"]["enum"] == [*ERROR_TYPES, None]
    assert definition("tool_result")["properties"]["error_class"]["enum"] == [*ERROR_CLASSES, None]
    assert definition("run_finished")["properties"]["status"]["enum"] == [s.value for s in Status]
    assert SCHEMA["$defs"]["decision"]["enum"] == list(typing.get_args(Decision))
    assert SCHEMA["$defs"]["domain"]["enum"] == list(DOMAINS)
    policy_schema = json.loads((Path(__file__).parents[1] / "policies" / "policy.schema.json").read_text())
    assert SCHEMA["$defs"]["mode"]["enum"] == policy_schema["properties"]["mode"]["enum"]
    before_a_signal = {cls.type for cls in EVENTS} - {"interrupted", "run_finished"} | {"start"}
    assert set(definition("interrupted")["properties"]["during"]["enum"]) == before_a_signal


RULE = {"file": "/p/default.jsonc", "index": 2, "line": 14, "domain": "read", "pattern": "**", "decision": "allow"}
DENY_RULE = {**RULE, "domain": "bash", "pattern": "shell:rm *", "decision": "deny"}


def examples(run_id: str) -> list[Event]:
    decision = {"eventId": "0" * 32, "sessionId": run_id, "timestamp": utc_now(), "call_id": "call_1"}
    return [
        RunStarted(version="0.1.0", model="gpt-4o-mini", policy="/p/default.jsonc", mode="agent", workspace="/w",
                   task_sha256=SHA, max_turns=50, timeout_s=1800.0,
                   sandbox={"mode": "auto", "active": True, "mechanism": "bwrap",
                            "network": {"allow": ["pypi.org"]}, "reason": None}),
        RunStarted(version="0.1.0", model="replay:/r", policy="/p/ci.jsonc", mode="full_access", workspace="/w",
                   task_sha256=SHA, max_turns=1, timeout_s=60, replay_of=RUN_ID, approved_calls=["call_1"]),
        ModelRequest(turn=1, message_count=2, estimated_tokens=120, prompt_bytes=480, prompt_sha256=SHA,
                     stage="none", prefix_hash=SHA, extends_previous=False),
        ModelRequest(turn=9, message_count=12, estimated_tokens=9000, prompt_bytes=36000, prompt_sha256=SHA,
                     stage="hard_clear", prefix_hash=SHA, extends_previous=False,
                     snapshot={"path": "history/2.json", "sha256": SHA}),
        Compaction(turn=9, stage="hard_clear", before_tokens=9000, after_tokens=4000, cleared={"bash": 3},
                   summary=None, history=None),
        Compaction(turn=12, stage="summarize", before_tokens=12000, after_tokens=3000, cleared={},
                   summary="[goal] …", history="/r/history/1.json"),
        ModelRetry(turn=1, attempt=1, error="HTTP 429", delay_s=0.5),
        ModelResponse(turn=1, message=assistant_message(None, [{"id": "call_1", "name": "read", "arguments": "{}"}],
                                                        1),
                      usage=usage_dict(None), finish_reason="tool_calls", duration_s=0.25),
        ModelResponse(turn=2, message=assistant_message("done", [], 2), usage=usage_dict(None), finish_reason=None,
                      duration_s=0),
        ModelResponse(turn=3, message=assistant_message("key: [REDACTED:env:OPENAI_API_KEY]", [], 3),
                      usage=usage_dict(None), finish_reason="stop", duration_s=0.1,
                      redacted={"kinds": ["env:OPENAI_API_KEY"], "sha256": SHA}),
        ToolCall(turn=1, call_id="call_1", tool="read", arguments='{"path": "a.txt"}'),
        ToolCall(turn=1, call_id="call_3", tool="bash", arguments='{"command": "echo [REDACTED:github-token]"}',
                 redacted={"kinds": ["github-token"], "sha256": SHA}),
        PermissionDecision(**decision, mode="agent", decision="allow", permissionDomain="read",
                           targets=[{"domain": "read", "target": "a.txt", "decision": "allow", "rule": RULE}],
                           rulePattern="**", tool="read", policy_decision="allow", rule=RULE),
        PermissionDecision(**decision, mode="full_access", decision="auto_approved", permissionDomain="edit",
                           targets=[{"domain": "edit", "target": "a.txt", "decision": "ask", "rule": None}],
                           rulePattern=None, tool="write", policy_decision="ask", rule=None),
        PermissionDecision(**decision, mode="agent", decision="deny", permissionDomain="bash",
                           targets=[{"domain": "bash", "target": "shell:rm -rf x", "decision": "deny",
                                     "rule": DENY_RULE},
                                    {"domain": "bash", "target": "shell:$(x)", "decision": "ask", "rule": None,
                                     "note": "command substitution"}],
                           rulePattern="shell:rm *", tool="bash", policy_decision="deny", rule=DENY_RULE,
                           replay="agent-run replay r --call call_1 --approve", approve=["bash:shell:rm -rf x"],
                           rerun=None),
        ToolResult(call_id="call_1", tool="read", ok=True, error_type=None, bytes=2, sha256=sha256_text("hi"),
                   duration_s=0.001, details={"lines": 1}, content="hi"),
        ToolResult(call_id="call_2", tool="bash", ok=False, error_type="ToolNotAllowed", bytes=3,
                   sha256=sha256_text("{x}"), duration_s=0.0, content="{x}"),
        ToolResult(call_id="call_3", tool="bash", ok=True, error_type=None, bytes=45, sha256=SHA, duration_s=0.01,
                   details={"exit_code": 0}, content="[REDACTED:aws-access-key] [REDACTED:private-key]",
                   redacted={"kinds": ["aws-access-key", "private-key"], "sha256": SHA}),
        NetworkRequest(call_id="call_1", host="pypi.org", port=443, decision="allow",
                       rule={**RULE, "domain": "network", "pattern": "net:pypi.org:443"}),
        NetworkRequest(call_id="call_1", host="evil.example", port=443, decision="deny", rule=None),
        GuardWarning(call_id="call_1", detector="same_call", message="possible loop: the same call"),
        RunWarning(code="profile_shadowed", message=".agents/agents/general.md: not loaded"),
        tag(RunWarning(code="front_matter_ignored", message="model (may only lower budgets)"), CHILD),
        RunInterrupted(signal="SIGTERM", during="start"),
        RunFinished(status="success", exit_code=0, reason=None, turns=2, tool_calls=1),
        RunFinished(status="interrupted", exit_code=130, reason="interrupted by SIGINT", turns=0, tool_calls=0),
        UserMessage(turn=4, reason="resume", content="[agent-run: the run stopped …]\n\ngo on"),
        McpServerStarted(server="time", transport="stdio", name="mcp-time", version="1.0", tools=2, duration_s=0.4),
        McpServerFailed(server="web", phase="start", kind="refused", message="the policy does not allow it",
                        required=False),
        RunStarted(version="0.1.0", model="gpt-4o-mini", policy="strict", mode="agent", workspace="/w",
                   task_sha256=SHA, max_turns=50, timeout_s=1800.0, policy_sha256=SHA,
                   resumed_from={"run_id": RUN_ID, "run_dir": ".agent-run/runs/" + RUN_ID, "kind": "fork",
                                 "at_turn": 3, "status": "killed"}),
        tag(SubagentStarted(call_id="call_1", name="reviewer", description="review the diff",
                            profile=".agents/agents/reviewer.md", trusted=False, model="gpt-4o-mini", mode="agent",
                            tools=["read", "grep"], tools_sha256=SHA, max_turns=10, timeout_s=300.0), CHILD),
        tag(ToolCall(turn=1, call_id="call_9", tool="read", arguments='{"path": "a.txt"}'), CHILD),
        ToolCall(turn=2, call_id="call_2_0", tool="read", arguments='{"path": "a.txt"}', source="text"),
        CheckStarted(call_id="check", command="pytest -q"),
        CheckFinished(call_id="check", command="pytest -q", ok=False, error_type="CommandFailed", exit_code=1,
                      duration_s=2.5, output_tail="1 failed", output_path="spill/check.txt"),
        HookStarted(event="PreToolUse", matcher="Bash", command="scripts/guard.sh", call_id="call_1_0"),
        HookFinished(event="PreToolUse", matcher="Bash", command="scripts/guard.sh", call_id="call_1_0", exit_code=2,
                     duration_s=0.1, decision="block", reason="use trash", error=None, output_tail="use trash"),
        HookFinished(event="Stop", matcher="", command="make -q", call_id=None, exit_code=None, duration_s=60.0,
                     decision=None, reason=None, error="killed at its timeout (60s)", output_tail=None),
        CheckStarted(call_id="check", command="pytest -q", attempt=2),
        AnswerRefused(turn=2, reason="claimed_change"),
        UserMessage(turn=2, reason="check_failed", content="[agent-run: the check `pytest -q` failed …]"),
        ModelFallback(turn=3, from_model="gpt-4o", to_model="gpt-4o-mini", reason="HTTP 503 after 3 retries"),
        Land(mode="pr", branch="agent-run/task", commit="c" * 40, remote="https://github.com/octo/hello",
             pull_request={"number": 12, "url": "https://github.com/octo/hello/pull/12"}, refused=None, reason=None),
        tag(SubagentFinished(call_id="call_1", status="doom_loop", reason="the same call 3 times", turns=4,
                             tool_calls=3, usage=usage_dict(None), duration_s=1.5), CHILD),
    ]


def test_examples_cover_every_event_type():
    assert {type(e) for e in examples(RUN_ID)} == set(EVENTS)


def test_events_as_logged_are_valid(tmp_path):
    run_id, run_dir = create_run_dir(tmp_path / "runs", tmp_path)
    log = EventLog(run_dir / "events.jsonl", run_id)
    for event in examples(run_id):
        log(event)
    log.close()
    assert validate_events_file(run_dir / "events.jsonl") == len(examples(run_id))


def test_a_masking_log_writes_valid_events(tmp_path):
    from runner.record.mask import Masker

    run_id, run_dir = create_run_dir(tmp_path / "runs", tmp_path)
    log = EventLog(run_dir / "events.jsonl", run_id, masker=Masker({"DEPLOY_TOKEN": "tok-0123456789"}))
    token = "ghp_" + "x" * 36
    log(ToolCall(turn=1, call_id="c", tool="bash", arguments=json.dumps({"command": f"echo {token}"})))
    log(ToolResult(call_id="c", tool="bash", ok=True, error_type=None, bytes=14, sha256=sha256_text("tok-0123456789"),
                   duration_s=0, content="tok-0123456789"))
    log(ToolResult(call_id="d", tool="bash", ok=True, error_type=None, bytes=0, sha256=sha256_text(""),
                   duration_s=0))
    log.close()
    assert validate_events_file(run_dir / "events.jsonl") == 3
    call, result, clean = (json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines())
    assert call["arguments"] == '{"command": "echo [REDACTED:github-token]"}'
    assert call["redacted"] == {"kinds": ["github-token"],
                                "sha256": sha256_text(json.dumps({"command": f"echo {token}"}))}
    assert result["content"] == "[REDACTED:env:DEPLOY_TOKEN]" and result["redacted"]["kinds"] == ["env:DEPLOY_TOKEN"]
    assert clean["redacted"] is None


@pytest.mark.parametrize(("status", "code"), EXIT_CODES.items())
def test_run_finished_exit_code_follows_status(status, code):
    reason = None if status is Status.SUCCESS else "why"
    assert event_error(record(RunFinished(status=status.value, exit_code=code, reason=reason, turns=1,
                                          tool_calls=0))) is None
    assert event_error(record(RunFinished(status=status.value, exit_code=code + 10, reason=reason, turns=1,
                                          tool_calls=0))) is not None


GOOD = record(ToolCall(turn=1, call_id="call_1", tool="read", arguments="{}"))


@pytest.mark.parametrize(("change", "expected"), [
    ({"extra": 1}, "Additional properties are not allowed"),
    ({"turn": "1"}, "is not of type 'integer'"),
    ({"seq": "1"}, "is not of type 'integer'"),
    ({"seq": 0}, "less than the minimum"),
    ({"ts": "2025-01-02T03:04:05Z"}, "does not match"),
    ({"ts": "2025-01-02T03:04:05.123+00:00"}, "does not match"),
    ({"run_id": "run-1"}, "does not match"),
    ({"type": "tool_called"}, "is not one of"),
])
def test_broken_events_are_rejected(change, expected):
    error = event_error({**GOOD, **change})
    assert error is not None and expected in error


@pytest.mark.parametrize("field", ["seq", "ts", "run_id", "type", "call_id"])
def test_missing_fields_are_rejected(field):
    error = event_error({k: v for k, v in GOOD.items() if k != field})
    assert error is not None and f"'{field}' is a required property" in error


@pytest.mark.parametrize(("event", "change"), [
    (ToolResult(call_id="c", tool="read", ok=True, error_type=None, bytes=0, sha256=SHA, duration_s=0),
     {"error_type": "IOError"}),
    (ToolResult(call_id="c", tool="read", ok=False, error_type="IOError", bytes=0, sha256=SHA, duration_s=0),
     {"error_type": "NoSuchError"}),
    (RunFinished(status="failed", exit_code=1, reason="x", turns=1, tool_calls=0), {"reason": None}),
    (RunInterrupted(signal="SIGINT", during="tool_call"), {"during": "run_finished"}),
    (RunWarning(code="profile_shadowed", message="x"), {"code": "Profile Shadowed"}),
    (RunWarning(code="profile_shadowed", message="x"), {"message": ""}),
    (ModelResponse(turn=1, message=assistant_message("hi", [], 1), usage=usage_dict(None), finish_reason="stop",
                   duration_s=0.1), {"message": {"role": "user", "content": "hi"}}),
    (ToolCall(turn=1, call_id="c", tool="bash", arguments="{}"), {"redacted": {"kinds": [], "sha256": SHA}}),
    (ToolCall(turn=1, call_id="c", tool="bash", arguments="{}"), {"redacted": {"kinds": ["x"]}}),
])
def test_inconsistent_events_are_rejected(event, change):
    assert event_error(record(event)) is None
    assert event_error({**record(event), **change}) is not None


def test_permission_decision_must_agree_with_itself():
    allow = record(examples(RUN_ID)[7])
    assert event_error(allow) is None
    assert event_error({**allow, "policy_decision": "deny"}) is not None
    assert event_error({**allow, "approve": ["read:a.txt"]}) is not None, "only a denial carries approvals"
    assert event_error({**allow, "decision": "auto_approved"}) is not None, "auto-approval needs full_access and ask"
    assert event_error({**allow, "decision": "maybe"}) is not None


def test_file_errors_name_the_line(tmp_path):
    path = tmp_path / "events.jsonl"
    second = {**GOOD, "seq": 2}
    path.write_text("\n".join(json.dumps(r) for r in (GOOD, {**second, "turn": -1})) + "\n", encoding="utf-8")
    with pytest.raises(AssertionError, match=r"events\.jsonl:2: tool_call event: turn: -1 is less than"):
        validate_events_file(path)
    path.write_text("\n".join(json.dumps(r) for r in (GOOD, GOOD)) + "\n", encoding="utf-8")
    with pytest.raises(AssertionError, match=r":2: .*seq is 1 on line 2"):
        validate_events_file(path)
    path.write_text(json.dumps(GOOD) + "\n{\n", encoding="utf-8")
    with pytest.raises(AssertionError, match=r":2: not a JSON object"):
        validate_events_file(path)
