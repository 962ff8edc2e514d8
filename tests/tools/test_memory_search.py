from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import ClassVar

import pytest

from runner.core.events import Event, ModelResponse, RunStarted, ToolCall, ToolResult
from runner.core.jsonutil import sha256_text
from runner.engine.cancel import RunCancel
from runner.record.rundir import EventLog
from runner.tools.base import ToolContext, ToolError
from runner.tools.memory_search import CONTEXT_CHARS, MAX_LIMIT, MAX_SNIPPET_CHARS, MemorySearch
from runner.tools.registry import core_tools


@dataclass(frozen=True)
class Compaction(Event):
    """A stand-in for the compaction event being added: searched through its `summary`."""

    type: ClassVar[str] = "compaction"
    stage: str
    summary: str


def result(call_id: str, tool: str, content: str) -> ToolResult:
    return ToolResult(call_id=call_id, tool=tool, ok=True, error_type=None, bytes=len(content.encode()),
                      sha256=sha256_text(content), duration_s=0.01, content=content)


def assistant(turn: int, content: str | None) -> ModelResponse:
    return ModelResponse(turn=turn, message={"role": "assistant", "content": content},
                         usage={"prompt_tokens": 1, "completion_tokens": 1, "cached_tokens": 0},
                         finish_reason="stop", duration_s=0.1)


@pytest.fixture
def run_dir(ws):
    # Not named like a run id: the compaction stand-in is not in the events schema yet.
    path = ws / ".agent-run" / "runs" / "run"
    path.mkdir(parents=True)
    return path


def write_events(run_dir, *events: Event) -> None:
    log = EventLog(run_dir / "events.jsonl", "r1")
    log(RunStarted(version="0", model="m", policy="p", mode="agent", workspace="/ws", task_sha256="0" * 64,
                   max_turns=10, timeout_s=60.0))
    for event in events:
        log(event)
    log.close()


def search(run_dir, ws, **args):
    return MemorySearch().run(args, ToolContext(workspace=ws, cancel=RunCancel(), run_dir=run_dir))


def headers(text: str) -> list[str]:
    return re.findall(r"^\[seq \d+ · [^\]]*\]", text, flags=re.M)


def test_finds_an_old_tool_output_by_a_word_in_it(ws, run_dir):
    write_events(run_dir,
                 ToolCall(turn=1, call_id="call_1_0", tool="read", arguments='{"path": "a.txt"}'),
                 result("call_1_0", "read", "1\tconfig loaded\n2\tthe deploy key is PINEAPPLE-42\n3\tdone"),
                 result("call_2_0", "list", "a.txt\nb.txt"))
    out = search(run_dir, ws, query="pineapple")
    assert headers(out.content) == ["[seq 3 · tool_result · read call_1_0]"]
    assert "the deploy key is PINEAPPLE-42" in out.content
    assert out.details["matches"] == 1


def test_several_words_match_entries_containing_all_of_them(ws, run_dir):
    write_events(run_dir,
                 result("c1", "grep", "alpha and gamma, far apart: alpha ... gamma"),
                 result("c2", "grep", "alpha only"),
                 result("c3", "grep", "gamma only"))
    out = search(run_dir, ws, query="Gamma   ALPHA")
    assert headers(out.content) == ["[seq 2 · tool_result · grep c1]"]
    assert headers(search(run_dir, ws, query="alpha only").content) == ["[seq 3 · tool_result · grep c2]"]


def test_newest_first_and_limit(ws, run_dir):
    write_events(run_dir, *(result(f"c{i}", "bash", f"run {i}: needle found") for i in range(6)))
    out = search(run_dir, ws, query="needle", limit=2)
    assert headers(out.content) == ["[seq 7 · tool_result · bash c5]", "[seq 6 · tool_result · bash c4]"]
    assert out.details == {"matches": 6, "shown": 2, "events": 7, "spill_files": 0, "spill_matches": 0}
    assert "6 matches" in out.content and "2 shown" in out.content
    every = search(run_dir, ws, query="needle")
    assert [h.split()[1] for h in headers(every.content)] == ["7", "6", "5", "4", "3", "2"]


def test_limit_is_capped(ws, run_dir):
    write_events(run_dir, *(result(f"c{i}", "bash", "needle") for i in range(MAX_LIMIT + 5)))
    assert len(headers(search(run_dir, ws, query="needle", limit=500).content)) == MAX_LIMIT


def test_assistant_messages_and_summaries_are_searched_but_not_its_own_results(ws, run_dir):
    write_events(run_dir,
                 assistant(1, "I will remember the Kumquat plan."),
                 Compaction(stage="summarize", summary="Earlier: the kumquat plan was approved."),
                 result("m1", "memory_search", "[seq 2 · model_response · turn 1] the Kumquat plan"))
    out = search(run_dir, ws, query="kumquat plan")
    assert headers(out.content) == ["[seq 3 · compaction · summarize]", "[seq 2 · model_response · turn 1]"]


def test_snippet_is_context_around_the_match_and_capped(ws, run_dir):
    big = "x" * 5000 + " MARKER " + "y" * 5000
    write_events(run_dir, result("c1", "read", big))
    out = search(run_dir, ws, query="marker")
    body = out.content.split("] ", 1)[1].split("\n\n")[0]
    assert body.startswith("…") and body.endswith("…") and "MARKER" in body
    assert len(body) <= min(MAX_SNIPPET_CHARS, 2 * CONTEXT_CHARS + len("MARKER")) + 2
    assert len(out.content) < 1000


def test_no_match_is_said_plainly(ws, run_dir):
    write_events(run_dir, result("c1", "read", "nothing to see"))
    out = search(run_dir, ws, query="zebra")
    assert out.content.startswith("[no match for 'zebra'")
    assert out.details["matches"] == 0


def test_no_run_dir_is_an_io_error(ws, tmp_path):
    tool = MemorySearch()
    with pytest.raises(ToolError) as exc:
        tool.run({"query": "x"}, ToolContext(workspace=ws, cancel=RunCancel()))
    assert exc.value.type == "IOError"
    with pytest.raises(ToolError) as exc:
        tool.targets({"query": "x"}, ToolContext(workspace=ws, cancel=RunCancel()))
    assert exc.value.type == "IOError"
    with pytest.raises(ToolError) as exc:
        tool.run({"query": "x"}, ToolContext(workspace=ws, cancel=RunCancel(), run_dir=tmp_path / "gone"))
    assert exc.value.type == "IOError"


def test_target_is_the_runs_own_event_log(ws, run_dir):
    targets = MemorySearch().targets({"query": "x"}, ToolContext(workspace=ws, cancel=RunCancel(), run_dir=run_dir))
    assert [(t.domain, t.target) for t in targets] == [("read", "workspace:.agent-run/runs/run/events.jsonl")]


def test_registered_after_the_others_before_todo():
    # New tools go at the end of the list, so the prefix of earlier recordings' tool arrays stays the same.
    assert core_tools().names[-2:] == ["memory_search", "todo"]


def test_spill_files_are_searched_with_their_path_and_line(ws, run_dir):
    """What truncation cut lives only in a spill file: found there, named by path and line (issue 34 item 3)."""
    write_events(run_dir, result("c1", "bash", "...cut...\nthe tail"))
    outputs = run_dir / "outputs"
    outputs.mkdir()
    spill = outputs / "tool_20260101T000000000000_abcd1234"
    spill.write_text("".join(f"line {i}\n" for i in range(1, 500)) + "the MANGO-7 marker\nmore\n")
    ctx = ToolContext(workspace=ws, cancel=RunCancel(), run_dir=run_dir, outputs_dir=outputs)
    out = MemorySearch().run({"query": "mango-7"}, ctx)
    assert f"[spill {spill} · line 500] the MANGO-7 marker" in out.content
    assert out.details["matches"] == 1 and out.details["spill_matches"] == 1 and out.details["spill_files"] == 1


def test_the_spill_search_is_capped_and_says_so(ws, run_dir, monkeypatch):
    from runner.tools import memory_search

    monkeypatch.setattr(memory_search, "MAX_SPILL_BYTES", 1000)
    write_events(run_dir)
    outputs = run_dir / "outputs"
    outputs.mkdir()
    (outputs / "tool_20260101T000000000000_00000000").write_text("old needle\n")
    (outputs / "tool_20260102T000000000000_00000000").write_text("x" * 2000 + "\nneedle\n")
    ctx = ToolContext(workspace=ws, cancel=RunCancel(), run_dir=run_dir, outputs_dir=outputs)
    out = MemorySearch().run({"query": "needle"}, ctx)
    assert "no match" in out.content and "spill search stopped" in out.content
    assert out.details["spill_stopped"].endswith("MiB of spill files searched")


def test_a_symlink_among_the_spill_files_is_not_followed(ws, run_dir, tmp_path):
    """Spill files are the runner's own regular files: a `tool_*` symlink (to a file the policy may not let `read`
    show, or to a FIFO that would hang the search) is not read."""
    write_events(run_dir)
    outputs = run_dir / "outputs"
    outputs.mkdir()
    secret = tmp_path / "elsewhere"
    secret.write_text("the PAPAYA-3 secret\n")
    (outputs / "tool_20260101T000000000000_00000000").symlink_to(secret)
    os.mkfifo(tmp_path / "fifo")
    (outputs / "tool_20260102T000000000000_00000000").symlink_to(tmp_path / "fifo")
    ctx = ToolContext(workspace=ws, cancel=RunCancel(), run_dir=run_dir, outputs_dir=outputs)
    out = MemorySearch().run({"query": "papaya-3"}, ctx)
    assert "no match" in out.content and out.details["spill_files"] == 0
