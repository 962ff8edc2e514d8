"""Half an emoji from the model (issue 42, item 3): JSON escapes a character beyond the BMP as a UTF-16 pair
(`\\ud83d\\ude00`), and a server that cuts its text between the halves sends one half alone. A half with no other
half becomes U+FFFD where the reply enters the runner, with a `warning` (code lone_surrogate); a pair split across
two stream chunks is one character again; the exit code is always the record's."""

from __future__ import annotations

import json

import pytest

from tests.cli.ending import ended_with
from tests.fakes.openai_server import HALF_EMOJI, reply

OTHER_HALF = "\ude00"  # the low half of 😀's pair


def _lone_warnings(r) -> list[dict]:
    return [w for w in r.of_type("warning") if w["code"] == "lone_surrogate"]


@pytest.mark.parametrize("stream", ["--stream", "--no-stream"])
def test_a_lone_surrogate_in_the_answer_is_replaced_with_a_warning(fake, agent_run, stream):
    fake.add(reply(f"half {HALF_EMOJI} an emoji"))
    r = agent_run(stream, "task.md")
    s = ended_with(r, 0, "success")
    assert r.stdout.strip() == "half \ufffd an emoji" == s["answer"], r.stderr
    [warning] = _lone_warnings(r)
    assert "1 lone UTF-16 surrogate" in warning["message"] and "U+FFFD" in warning["message"]
    assert any(w.startswith("lone_surrogate: ") for w in s["warnings"])
    assert "Traceback" not in r.stderr


def test_a_pair_split_across_stream_chunks_is_one_character_and_a_lone_half_is_replaced(fake, agent_run):
    # chunks of 3: "ab\ud83d", "\ude00cd", "\ud83dxy": a pair split by the chunking, then a half alone
    fake.add(reply(f"ab{HALF_EMOJI}{OTHER_HALF}cd{HALF_EMOJI}xy", piece=3))
    r = agent_run("--stream", "--output-format", "stream-json", "task.md")
    s = ended_with(r, 0, "success")
    lines = [json.loads(line) for line in r.stdout.splitlines()]
    deltas = "".join(line["text"] for line in lines if line["type"] == "text_delta")
    assert deltas == "ab😀cd\ufffdxy" == lines[-1]["answer"] == s["answer"], r.stderr
    [warning] = _lone_warnings(r)
    assert "1 lone UTF-16 surrogate" in warning["message"]


def test_a_whole_pair_split_across_chunks_is_no_warning(fake, agent_run):
    fake.add(reply(f"ab{HALF_EMOJI}{OTHER_HALF}cd", piece=3))
    r = agent_run("--stream", "task.md")
    s = ended_with(r, 0, "success")
    assert s["answer"] == "ab😀cd" and r.stdout.strip() == "ab😀cd"
    assert not _lone_warnings(r)


@pytest.mark.parametrize(("escaped", "stream"), [(False, "--stream"), (True, "--no-stream")],
                         ids=["in-the-reply", "inside-the-arguments"])
def test_a_lone_surrogate_in_write_arguments_writes_a_replacement(fake, workspace, agent_run, stream, escaped):
    # in-the-reply: the arguments string itself holds half a pair (a JSON escape in the response);
    # inside-the-arguments: the arguments' own JSON escapes it (`\\ud83d` in the arguments text)
    args = '{"path": "a.txt", "content": "x' + ("\\ud83d" if escaped else HALF_EMOJI) + 'y"}'
    fake.add(reply(calls=[("write", args)]), reply("done"))
    r = agent_run(stream, "task.md")
    ended_with(r, 0, "success")
    assert (workspace / "a.txt").read_text(encoding="utf-8") == "x\ufffdy"
    [result] = r.of_type("tool_result")
    assert result["ok"], result
    assert len(_lone_warnings(r)) == 1


def test_a_lone_surrogate_escaped_in_a_call_written_as_text_writes_a_replacement(fake, workspace, agent_run):
    text = '<tool_call>\n{"name": "write", "arguments": {"path": "b.txt", "content": "x\\ud83dy"}}\n</tool_call>'
    fake.add(reply(text), reply("done"))
    r = agent_run("task.md")
    ended_with(r, 0, "success")
    assert (workspace / "b.txt").read_text(encoding="utf-8") == "x\ufffdy"
    assert len(_lone_warnings(r)) == 1
