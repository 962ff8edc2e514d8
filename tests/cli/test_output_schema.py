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


def test_a_resumed_run_still_answers_to_its_schema(fake, workspace, agent_run):
    fake.add(reply(calls=[("list", {})]))
    first = agent_run("--output-schema", _schema(workspace), "--max-turns", "1", "task.md")
    assert first.code == 5
    fake.add(reply("all done, no JSON"), reply('{"verdict": "pass", "files": []}'))
    resumed = agent_run("resume", str(first.run_dir))
    assert resumed.code == 0, resumed.stderr
    assert "does not match the required JSON Schema" in fake.requests[-1]["messages"][-1]["content"]
    assert resumed.summary["output"] == {"verdict": "pass", "files": []}
    assert (resumed.run_dir / "output.json").is_file()

    (workspace / "schema.json").write_text(json.dumps({"type": "string"}))
    changed = agent_run("resume", str(first.run_dir))
    assert changed.code == 2 and "not here unchanged" in changed.stderr and changed.new_dirs == []


def test_schema_errors_are_found_before_the_run_and_a_too_deep_answer_is_repaired(fake, workspace, agent_run):
    (workspace / "remote.json").write_text(json.dumps({"$ref": "https://example.com/s.json"}))
    r = agent_run("--output-schema", "remote.json", "task.md")
    assert r.code == 2 and "do not resolve" in r.stderr and fake.requests == []
    fake.add(reply("[" * 100_000 + "]" * 100_000), reply('{"verdict": "fail", "files": []}'))
    r = agent_run("--output-schema", _schema(workspace), "task.md")
    assert r.code == 0, r.stderr
    assert "nested too deeply" in fake.requests[1]["messages"][-1]["content"]


def test_deeply_nested_arguments_are_an_error_the_model_can_act_on(fake, workspace, agent_run):
    deep = "[" * 100_000 + "]" * 100_000
    fake.add(reply(calls=[("read", deep)]), reply("gave up"))
    r = agent_run("task.md")
    assert r.code == 0, r.stderr
    assert json.loads(r.of_type("tool_result")[0]["content"])["error"]["type"] == "InvalidArguments"


def test_a_large_output_keeps_the_job_outputs_under_githubs_limit(fake, workspace, agent_run, tmp_path):
    """A job's outputs share 1 MB: a 1.1 MB structured answer must not push $GITHUB_OUTPUT over it (with
    `summary-json` beside it, which carried the output a second time). The output is left empty rather
    than cut into invalid JSON, and an annotation says where the value is."""
    from tests.cli.test_batch_github import github_outputs

    big = {"verdict": "pass", "files": ["f" * 1000 + str(i) for i in range(1100)]}
    fake.add(reply(json.dumps(big)))
    output = tmp_path / "github-output"
    r = agent_run("--output-schema", _schema(workspace), "task.md",
                  env={"GITHUB_ACTIONS": "true", "GITHUB_OUTPUT": str(output)})
    assert r.code == 0, r.stderr
    assert r.summary["output"] == big and json.loads((r.run_dir / "output.json").read_text()) == big
    assert output.stat().st_size < 1_000_000
    values = github_outputs(output)
    assert values["output"] == ""
    compact = json.loads(values["summary-json"])
    assert compact["status"] == "success" and compact["output_omitted"] is True and compact["output"] is None
    assert "::warning title=agent-run%3A output too large for a step output::" in r.stderr, r.stderr
