"""--output-schema (issue 14): a valid answer passes, an invalid one is repaired, and after the limit the run
fails with the errors."""

from __future__ import annotations

import json

from tests.fakes.openai_server import reply

SCHEMA = {"type": "object", "required": ["verdict", "files"], "additionalProperties": False,
          "properties": {"verdict": {"enum": ["pass", "fail"]},
                         "files": {"type": "array", "items": {"type": "string"}}}}


def _schema(workspace) -> str:
    (workspace / "schema.json").write_text(json.dumps(SCHEMA))
    return "schema.json"


def test_a_valid_answer_is_the_output(fake, workspace, agent_run):
    fake.add(reply('```json\n{"verdict": "pass", "files": ["a.py"]}\n```'))
    r = agent_run("--output-schema", _schema(workspace), "task.md")
    assert r.code == 0, r.stderr
    assert json.loads(r.stdout) == {"verdict": "pass", "files": ["a.py"]}
    assert r.summary["output"] == {"verdict": "pass", "files": ["a.py"]}
    assert json.loads((r.run_dir / "output.json").read_text()) == r.summary["output"]
    assert "output.json" in r.summary["integrity"]["files"]
    assert '"verdict"' in fake.requests[0]["messages"][0]["content"]  # the schema is in the system prompt


def test_an_invalid_answer_is_repaired_in_one_retry(fake, workspace, agent_run):
    fake.add(reply('{"verdict": "maybe"}'), reply('{"verdict": "fail", "files": []}'))
    r = agent_run("--output-schema", _schema(workspace), "task.md")
    assert r.code == 0, r.stderr
    told = fake.requests[1]["messages"][-1]["content"]
    assert "does not match the required JSON Schema" in told and "'files' is a required property" in told
    assert "verdict: 'maybe' is not one of" in told
    assert r.summary["output"] == {"verdict": "fail", "files": []}
    assert [e["reason"] for e in r.of_type("user_message")] == ["output_schema"]


def test_after_the_limit_the_run_fails_with_the_errors(fake, workspace, agent_run):
    fake.add(reply("not json"), reply("still not"), reply('{"verdict": 1}'))
    r = agent_run("--output-schema", _schema(workspace), "task.md")
    assert r.code == 1 and r.summary["status"] == "failed"
    assert "does not match --output-schema after 2 repairs" in r.summary["reason"]
    assert r.summary["output_errors"] and "output" not in r.summary


def test_a_broken_schema_is_a_usage_error(fake, workspace, agent_run):
    (workspace / "bad.json").write_text('{"type": "objekt"}')
    r = agent_run("--output-schema", "bad.json", "task.md")
    assert r.code == 2 and "not a valid JSON Schema" in r.stderr and not fake.requests
