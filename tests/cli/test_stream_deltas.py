"""`--stream --output-format stream-json`: text_delta lines on stdout as the model's text arrives, masked,
before the final `result` line, never in events.jsonl."""

from __future__ import annotations

import json

from tests.fakes.openai_server import reply
from tests.fakes.summary_schema import validate_result_line

GHP = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"  # 36 characters after the prefix

PEM = ("-----BEGIN OPENSSH PRIVATE KEY-----\n"
       "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
       "QyNTUxOQAAACBoZXJlIGlzIG5vIGtleSBoZXJlLCBqdXN0IGEgdGVzdC4uLi4uLi4uLi4u\n" * 6
       + "-----END OPENSSH PRIVATE KEY-----")  # longer than what is held back: it must wait whole

LONG = " ".join(f"word{i}" for i in range(1500))  # ~11,000 characters: longer than what the masking holds back


def lines_of(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines()]


def test_deltas_concatenate_to_the_answer_before_the_result(fake, workspace, agent_run):
    fake.add(reply("Let me look.", calls=[("list", {})]), reply(LONG, piece=7))
    r = agent_run("--stream", "--output-format", "stream-json", "task.md")
    assert r.code == 0, r.stderr
    lines = lines_of(r.stdout)
    assert lines[-1]["type"] == "result"
    validate_result_line(lines[-1])
    deltas = [line for line in lines if line["type"] == "text_delta"]
    assert all(set(d) == {"type", "turn", "text"} and d["text"] for d in deltas)
    assert "".join(d["text"] for d in deltas if d["turn"] == 1) == "Let me look."
    assert "".join(d["text"] for d in deltas if d["turn"] == 2) == LONG == lines[-1]["answer"]
    assert len([d for d in deltas if d["turn"] == 2]) > 1  # streamed in pieces, not once at the end
    last_delta = max(i for i, line in enumerate(lines) if line["type"] == "text_delta")
    assert last_delta < len(lines) - 1
    # turn 1's text comes before its tool call runs
    first_tool = next(i for i, line in enumerate(lines) if line["type"] == "tool_call")
    assert max(i for i, line in enumerate(lines) if line["type"] == "text_delta" and line["turn"] == 1) < first_tool
    responses = [i for i, line in enumerate(lines) if line["type"] == "model_response"]
    assert max(i for i, line in enumerate(lines) if line["type"] == "text_delta" and line["turn"] == 2) < responses[1]
    assert "text_delta" not in {e["type"] for e in r.events}
    assert all(json.loads(line)["type"] != "text_delta"
               for line in (r.run_dir / "events.jsonl").read_text().splitlines())


def test_a_secret_split_across_deltas_never_reaches_stdout(fake, workspace, agent_run):
    answer = LONG[:5000] + f" token {GHP} here " + LONG[5000:]
    fake.add(reply(answer, piece=5))
    r = agent_run("--stream", "--output-format", "stream-json", "task.md")
    assert r.code == 0, r.stderr
    assert GHP not in r.stdout and GHP[4:24] not in r.stdout and GHP[-20:] not in r.stdout
    deltas = [line for line in lines_of(r.stdout) if line["type"] == "text_delta"]
    assert len(deltas) > 1
    text = "".join(d["text"] for d in deltas)
    assert text.startswith(LONG[:5000] + " token ") and text.endswith(" here " + LONG[5000:])
    assert GHP not in text and "[REDACTED:" in text
    assert text == lines_of(r.stdout)[-1]["answer"]  # masked the same way as the result's answer


def test_no_deltas_without_stream_or_stream_json(fake, agent_run):
    fake.add(reply("plain answer"), reply("json answer"))
    not_streamed = agent_run("--output-format", "stream-json", "task.md")
    text = agent_run("--stream", "task.md")
    assert "text_delta" not in not_streamed.stdout and text.stdout == "json answer\n"


def test_a_private_key_longer_than_the_hold_is_masked_whole(fake, workspace, agent_run):
    answer = LONG[:3000] + "\n" + PEM + "\n" + LONG[3000:]
    fake.add(reply(answer, piece=3))
    r = agent_run("--stream", "--output-format", "stream-json", "task.md")
    assert r.code == 0, r.stderr
    assert "b3BlbnNzaC1rZXkt" not in r.stdout and "QyNTUxOQAAACBo" not in r.stdout
    text = "".join(line["text"] for line in lines_of(r.stdout) if line["type"] == "text_delta")
    assert text == LONG[:3000] + "\n[REDACTED:private-key]\n" + LONG[3000:]
