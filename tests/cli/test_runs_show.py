"""`runs show` in bounded memory: a log of big events (a `write` of a big file each turn) is shown as text
and as --json without holding the log, measured in a fresh process (the peak RSS of each child)."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import clean_env
from tests.fakes.big_log import write_big_run

HANG_S = 120  # a hang bound only: the two views take a second or two
# A child that has imported the CLI is ~25 MiB; showing the log costs it a few more. The old code held every
# call's arguments (text: 25 + 48 MiB) or several copies of them (--json: ~200 MiB). The 286 MB log of the
# issue is bench/bench_runs_show.py's (under 100 MiB both ways); a smaller one shows the growth as well.
PEAK_MIB = 60
EVENTS, ARG_MIB = 48, 1

# One fresh interpreter imports the CLI once, then forks a child per view, each with its stdout on a file;
# os.wait4 gives each child's own peak RSS.
_PEAK = """
import json, os, resource, signal, sys, time
from runner.cli.main import main
out = []
for argv, stdout in json.loads(sys.argv[1]):
    pid = os.fork()
    if pid == 0:
        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))  # keep the machine safe if it regresses
        fd = os.open(stdout, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(fd, 1)
        try:
            main(argv)
        except SystemExit as exc:
            os._exit(exc.code if isinstance(exc.code, int) else 1)
        os._exit(0)
    end = time.monotonic() + float(sys.argv[2])
    while (done := os.wait4(pid, os.WNOHANG))[0] == 0 and time.monotonic() < end:
        time.sleep(0.02)
    if done[0] == 0:
        os.kill(pid, signal.SIGKILL)
        done = os.wait4(pid, 0)
    out.append({"code": os.waitstatus_to_exitcode(done[1]), "peak_kib": done[2].ru_maxrss})
print(json.dumps(out))
"""


def test_runs_show_of_a_big_log_stays_in_bounded_memory(tmp_path):
    run_dir = tmp_path / "runs" / "20260101T000000000000Z-big000"
    assert write_big_run(run_dir, EVENTS, ARG_MIB << 20) > EVENTS * ARG_MIB << 20
    text, as_json = tmp_path / "show.txt", tmp_path / "show.json"
    views = [(["runs", "show", str(run_dir)], str(text)), (["runs", "show", "--json", str(run_dir)], str(as_json))]
    proc = subprocess.run([sys.executable, "-c", _PEAK, json.dumps(views), str(HANG_S)], capture_output=True,
                          text=True, env=clean_env(), timeout=3 * HANG_S)
    got = json.loads(proc.stdout)
    assert [g["code"] for g in got] == [0, 0], proc.stderr
    assert all(g["peak_kib"] < PEAK_MIB * 1024 for g in got), got

    lines = text.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "run 20260101T000000000000Z-big000: success (exit 0)"
    calls = lines[lines.index(f"tool calls ({EVENTS})") + 2:]
    assert len(calls) == EVENTS and calls[0].split()[:3] == ["1", "write", "path=big.txt"]
    assert calls[0].split()[3].endswith("…")  # the arguments cut at 60 characters

    data = json.loads(as_json.read_bytes())  # one JSON document, the same shape as before
    assert sorted(data) == ["compactions", "continued_by", "denials", "requests", "run_dir", "summary", "tool_calls"]
    assert data["summary"]["status"] == "success" and len(data["requests"]) == EVENTS
    first = data["tool_calls"][0]
    assert (first["tool"], first["decision"], first["outcome"], first["bytes"]) == ("write", "allow", "ok", 20)
    assert json.loads(first["arguments"]) == {"path": "big.txt", "content": "x" * (ARG_MIB << 20)}
    assert len(data["tool_calls"]) == EVENTS


def test_runs_show_json_is_unchanged_for_a_small_run(tmp_path):
    """Written item by item, --json is still what json.dumps(indent=2, sort_keys=True) printed."""
    from runner.cli.runs_read import Spool, account, overview
    from runner.cli.runs_show import write_json

    run_dir = tmp_path / "r"
    run_dir.mkdir()
    events = [{"seq": 1, "type": "run_started", "model": "m"},
              {"seq": 2, "type": "tool_call", "turn": 1, "call_id": "c", "tool": "read", "arguments": "{}"},
              {"seq": 3, "type": "compaction", "turn": 1, "stage": "hard_clear", "cleared": {"read": 1}}]
    (run_dir / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    spool = Spool()
    data = account(run_dir, overview(run_dir), spool)
    with (tmp_path / "out").open("wb") as f:
        write_json(data, spool, f)
    assert (tmp_path / "out").read_text() == json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def test_runs_show_transcript_of_a_big_log_is_streamed_in_bounded_memory(tmp_path):
    """--transcript of a 32 MiB log (each turn a 2 MiB `write` and as big a result) peaks under 100 MiB, as the
    other views: written as it is rendered, a line of an output or of arguments cut as the text view cuts it."""
    from runner.report.transcript import LINE_CHARS

    run_dir = tmp_path / "runs" / "20260101T000000000000Z-big001"
    assert write_big_run(run_dir, 8, 2 << 20, big_results=True) >= 32 << 20
    out = tmp_path / "transcript.md"
    proc = subprocess.run([sys.executable, "-c", _PEAK, json.dumps([(["runs", "show", "--transcript", str(run_dir)],
                                                                     str(out))]), str(HANG_S)],
                          capture_output=True, text=True, env=clean_env(), timeout=3 * HANG_S)
    got = json.loads(proc.stdout)
    assert got[0]["code"] == 0, proc.stderr
    assert got[0]["peak_kib"] <= 100 * 1024, got
    text = out.read_text(encoding="utf-8")
    assert text.startswith("# agent-run: 20260101T000000000000Z-big001\n") and text.endswith("\n")
    assert text.count("### `write` call") == 8 and "## Final answer" in text
    assert max(len(line) for line in text.splitlines()) <= LINE_CHARS
    assert "x" * (LINE_CHARS - 1) + "…" in text  # the content, cut where the line is


def test_runs_show_audit_of_a_big_audit_log_is_streamed_in_bounded_memory(tmp_path):
    """--audit and --audit --json of a 32 MiB audit.jsonl peak under 100 MiB: read twice (the table's widths, then
    its rows) or written record by record, never held; the output is what it was."""
    from runner.cli.runs_audit import HEADERS, audit_json
    from runner.cli.runs_format import cell

    run_dir = tmp_path / "runs" / "20260101T000000000000Z-audit0"
    run_dir.mkdir(parents=True)
    (run_dir / "events.jsonl").write_text("")
    wide = "w" * 1000
    record = {"call_id": "call_1_0", "tool": "bash", "risk": "high", "decision": "allow", "outcome": "ok",
              "targets": [{"domain": "shell", "target": wide}], "output_bytes": 12, "duration_s": 0.5}
    count = (32 << 20) // len(json.dumps(record)) + 1
    # Each record is the one above with its own seq: written (and its expected --json text made) from one
    # rendering, the seq put in, rather than 30,000 renderings.
    line = json.dumps({"seq": 0, **record}).removeprefix('{"seq": 0')
    with (run_dir / "audit.jsonl").open("w") as f:
        f.writelines(f'{{"seq": {seq}{line}\n' for seq in range(1, count + 1))
    text, as_json = tmp_path / "audit.txt", tmp_path / "audit.json"
    views = [(["runs", "show", "--audit", str(run_dir)], str(text)),
             (["runs", "show", "--audit", "--json", str(run_dir)], str(as_json))]
    proc = subprocess.run([sys.executable, "-c", _PEAK, json.dumps(views), str(HANG_S)], capture_output=True,
                          text=True, env=clean_env(), timeout=3 * HANG_S)
    got = json.loads(proc.stdout)
    assert [g["code"] for g in got] == [0, 0], proc.stderr
    assert all(g["peak_kib"] <= 100 * 1024 for g in got), got

    lines = text.read_text(encoding="utf-8").splitlines()
    assert len(lines) == count + 1
    row = [cell(count), "call_1_0", "-", "bash", "high", "allow", "-", "-", "ok", "-", "12", "0.5s", "w" * 59 + "…",
           "-"]  # no `met` (a record of an earlier version)
    assert lines[0].split() == HEADERS and lines[-1].split() == row
    # What json.dumps(records, indent=2, sort_keys=True) printed before it was streamed: each record's rendering
    # indented, the seq put in (checked against json.dumps itself on two records).
    one = json.dumps({"seq": 0, **record}, indent=2, sort_keys=True, ensure_ascii=False)
    head, _, tail = one.replace("\n", "\n  ").partition('"seq": 0')

    def listed(seqs: range) -> str:
        return "[\n" + ",\n".join(f'  {head}"seq": {seq}{tail}' for seq in seqs) + "\n]\n"

    two = [{"seq": seq, **record} for seq in (1, 2)]
    assert listed(range(1, 3)) == json.dumps(two, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    assert as_json.read_text(encoding="utf-8") == listed(range(1, count + 1))
    assert "".join(audit_json([])) == "[]"
