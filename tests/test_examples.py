"""README's Quickstart: the shipped example replays offline and exits 0, every time."""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

from tests.conftest import agent_run_argv, clean_env
from tests.fakes.openai_server import reply
from tests.fakes.zygote import run

HELLO = Path(__file__).resolve().parents[1] / "examples" / "hello"


def test_hello_example_replays_offline_and_repeatably(tmp_path, agent_run_zygote):
    ws = tmp_path / "hello"
    shutil.copytree(HELLO, ws, ignore=shutil.ignore_patterns(".agent-run", "REPORT.md"))
    argv = [*agent_run_argv(), "--workspace", str(ws), "--policy", str(ws / "policy.jsonc"),
            "--model", f"replay:{ws / 'recording'}", str(ws / "task.md")]
    env = clean_env(OPENAI_BASE_URL="http://127.0.0.1:9/v1")  # nothing listens: the replay must not need it
    for _ in range(2):
        proc = run(agent_run_zygote, argv, env=env, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        assert "Wrote REPORT.md" in proc.stdout
    report = (ws / "REPORT.md").read_text()
    assert "src/app.py:7:" in report and "src/util.py:5:" in report
    assert len(list((ws / ".agent-run" / "runs").iterdir())) == 2


RUN_ID = re.compile(r"\d{8}T\d{12}Z\\*-[0-9a-f]{6}")  # also as escaped in a regex rule (\-)
STAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})?")
HASH = re.compile(r"\b[0-9a-f]{32,64}\b")
SECONDS = re.compile(r"\b\d+\.\d+ ?s\b")
# Facts of the recording run, not of what it recorded: where it ran, how long it took, which process.
WHERE_AND_WHEN = {"workspace", "run_dir", "ts", "timestamp", "pid"}


def _normal(value, key: str | None = None):
    if key in WHERE_AND_WHEN or (key or "").startswith("duration") or (key or "").endswith("_ms"):
        return "<volatile>"
    if isinstance(value, dict):
        return {k: _normal(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_normal(v) for v in value]
    if isinstance(value, str):
        return SECONDS.sub("<s>", HASH.sub("<hash>", STAMP.sub("<ts>", RUN_ID.sub("<run>", value))))
    return value


def _contents(recording: Path) -> dict[str, object]:
    out: dict[str, object] = {}
    for path in sorted(p for p in recording.rglob("*") if p.is_file()):
        rel = path.relative_to(recording).as_posix()
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".jsonl":
            out[RUN_ID.sub("<run>", rel)] = [_normal(json.loads(line)) for line in text.splitlines() if line.strip()]
        elif path.name == "policy.json":
            # The rules every run adds for its own directory and its hard limits name this machine's paths
            # (the files they protect); the replay compares policies without them too (runner/model/replay.py).
            data = json.loads(text)
            data["permission"]["rules"] = [r for r in data["permission"]["rules"]
                                           if r["source"] not in ("<hard limit>", "<run outputs>")]
            out[rel] = _normal(data)
        elif path.suffix == ".json":
            out[HASH.sub("<hash>", rel)] = _normal(json.loads(text))
        else:
            out[rel] = _normal(text)
    return out


def test_the_committed_recording_is_what_record_hello_records_now(tmp_path):
    """examples/record_hello.py re-records the Quickstart's recording; the committed one differs only in run
    ids, timestamps, durations, hashes and where it ran — and names no other path of the machine it was made on."""
    sys.path.insert(0, str(HELLO.parent))
    try:
        import record_hello
    finally:
        sys.path.remove(str(HELLO.parent))
    example = tmp_path / "hello"
    shutil.copytree(HELLO, example, ignore=shutil.ignore_patterns(".agent-run", "REPORT.md", "recording"))
    proc = record_hello.record(example, tmp_path / "recording")
    assert proc.returncode == 0, proc.stderr
    fresh, committed = _contents(tmp_path / "recording"), _contents(HELLO / "recording")
    assert sorted(fresh) == sorted(committed)
    for name in fresh:
        assert fresh[name] == committed[name], f"{name} differs: run `python examples/record_hello.py`"
    for path in (HELLO / "recording").rglob("*"):
        if path.is_file():
            text = path.read_text(encoding="utf-8")
            for line in text.splitlines():
                if path.name == "events.jsonl" and '"run_started"' in line:
                    line = json.dumps({k: v for k, v in json.loads(line).items() if k != "workspace"})
                if path.name == "summary.json":
                    continue  # run_dir only: checked below
                assert '"/' not in line, f"{path.name}: an absolute path: {line[:200]}"
    summary = json.loads((HELLO / "recording" / "summary.json").read_text())
    assert {k: v for k, v in summary.items() if isinstance(v, str) and v.startswith("/")}.keys() <= {"run_dir"}


# An absolute path of two segments or more, wherever it is written: a JSON value, a regex rule's escaped text
# (`regex:fs:/work/x\\.jsonc`), a transcript line.
MACHINE_PATH = re.compile(r"(?<![\w.~*\\/-])/[\w.-]+(?:(?:\\\\|\\)?/[\w.\\-]+)+")


def test_the_shipped_recording_names_no_path_of_the_machine_it_was_made_on():
    """Issue 42, item 10: only where it ran (run_started.workspace, summary.run_dir) and the spill fallback
    (the `<run outputs>` rule of a run directory that had no room) name a path of the recording machine; the
    hard limit protecting the shipped policy names it by the shipped directory's placeholder."""
    recording = HELLO / "recording"
    allowed = {"/dev/null"}  # changes.patch's side of a created file
    started = json.loads((recording / "events.jsonl").read_text(encoding="utf-8").splitlines()[0])
    allowed.add(started["workspace"])
    allowed.add(json.loads((recording / "summary.json").read_text(encoding="utf-8"))["run_dir"])
    policy = json.loads((recording / "policy.json").read_text(encoding="utf-8"))
    allowed |= {m for r in policy["permission"]["rules"] if r["source"] == "<run outputs>"
                for m in MACHINE_PATH.findall(r["pattern"]) if "agent\\-run\\-outputs" in m}
    found = []
    for path in sorted(p for p in recording.rglob("*") if p.is_file()):
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".jsonl":  # its strings as they read, not as JSON escapes them
            text = "\n".join(_strings([json.loads(line) for line in text.splitlines() if line.strip()]))
        elif path.suffix == ".json":
            text = "\n".join(_strings(json.loads(text)))
        found += [f"{path.name}: {m}" for m in MACHINE_PATH.findall(text)
                  if m not in allowed and not any(m.startswith(a + "/") for a in allowed)]
    assert found == []


def _strings(value):
    if isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)
    elif isinstance(value, str):
        yield value


def test_the_quickstart_replays_without_a_warning(tmp_path, agent_run_zygote):
    ws = tmp_path / "hello"
    shutil.copytree(HELLO, ws, ignore=shutil.ignore_patterns(".agent-run", "REPORT.md"))
    proc = run(agent_run_zygote, [*agent_run_argv(), "--policy", "policy.jsonc", "--model", "replay:recording",
                                  "task.md"],
               cwd=ws, env=clean_env(OPENAI_BASE_URL="http://127.0.0.1:9/v1"), capture_output=True, text=True,
               timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "warning" not in proc.stderr.lower(), proc.stderr


def test_the_shipped_recording_resumes_in_another_checkout(workspace, fake, agent_run):
    """Its sealed policy.json verifies where it was not made, and its hard limit on the shipped policy is this
    machine's shipped directory again when read back (runner/policy/load.py SHIPPED_DIR)."""
    shutil.copytree(HELLO, workspace, ignore=shutil.ignore_patterns(".agent-run", "REPORT.md", "recording"),
                    dirs_exist_ok=True)
    run_id = json.loads((HELLO / "recording" / "summary.json").read_text(encoding="utf-8"))["run_id"]
    shutil.copytree(HELLO / "recording", workspace / ".agent-run" / "runs" / run_id)
    fake.add(reply("Nothing else to do."))
    res = agent_run("resume", "--apply-changes", f".agent-run/runs/{run_id}", "Anything else?")
    assert res.code == 0, res.stderr
    assert "warning" not in res.stderr.lower(), res.stderr
    assert (workspace / "REPORT.md").is_file()
