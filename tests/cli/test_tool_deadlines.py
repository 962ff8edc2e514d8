"""`--timeout` holds inside every tool, through the real CLI (issue 26, item 11): a backtracking regex in grep, a
glob over a whole machine's tree and a web_fetch of a server that never finishes its headers each ran on far past
the run's deadline (grep's `(a+)+$` for more than 40 s; now `(a|aa)+$`, which the regex module backtracks on
too). Each now stops where it is at the deadline, and the run ends as a timeout does: exit 5, budget_exhausted,
a whole events log and a summary.

The three runs go at once (one fake server, each conversation routed by its task's text), so the test costs one
timeout of wall time, not three."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tests.conftest import Result
from tests.fakes.openai_server import reply
from tests.fakes.site import drip_site

TIMEOUT = 3
HANG_BOUND = TIMEOUT + 30  # a hang bound, not a timing assertion: the old code ran on for minutes


def _events(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "events.jsonl").read_text(encoding="utf-8").splitlines()]


def _ended_by_the_deadline(r: Result, workspace: Path, tool: str) -> dict:
    """The run ended as a timeout ends one, with a whole record; returns the tool's result event."""
    assert r.code == 5, r.stderr
    [run_dir] = list((workspace / ".agent-run" / "runs").iterdir())
    summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    assert summary["status"] == "budget_exhausted" and summary["exit_code"] == 5
    events = _events(run_dir)
    assert events[-1]["type"] == "run_finished" and events[-1]["status"] == "budget_exhausted"
    assert "timeout" in events[-1]["reason"]
    [result] = [e for e in events if e["type"] == "tool_result"]
    assert result["tool"] == tool
    return result


def test_grep_glob_and_web_fetch_stop_at_the_run_deadline(fake, tmp_path, agent_run):
    tasks = {"grep": "Search with GREP.", "glob": "Find with GLOB.", "web_fetch": "Fetch with FETCH."}
    for tool, text in tasks.items():  # a workspace each: a run holds its workspace's lock
        (tmp_path / tool).mkdir()
        (tmp_path / tool / "task.md").write_text(text + "\n", encoding="utf-8")
    # grep: this pattern backtracks on this line for hours (re and the regex module alike: regex optimises
    # `(a+)+$`, not this); no literal in the pattern, so no ripgrep prefilter.
    (tmp_path / "grep" / "bad.txt").write_text("a" * 60 + "b\n", encoding="utf-8")
    with drip_site() as site:
        port = site.getsockname()[1]
        # glob walks the whole machine (`/`, half a million files here: half a minute) for a name nowhere.
        calls = {"grep": {"pattern": "(a|aa)+$", "path": "."},
                 "glob": {"pattern": "**/no-such-name-anywhere", "path": "/"},
                 "web_fetch": {"url": f"http://127.0.0.1:{port}/"}}
        for tool, text in tasks.items():
            fake.route(text.split()[-1].rstrip("."), reply(calls=[(tool, calls[tool])]), reply("done"))
        policy = tmp_path / "p.jsonc"
        # Reads of the whole filesystem, which are high risk, allowed on purpose (risk.rules).
        policy.write_text(json.dumps({"extends": "default", "risk": {"rules": [
            {"domain": "read", "pattern": "fs:/**", "level": "low"}]}, "permission": {"rules": [
            {"domain": "read", "pattern": "fs:/**", "decision": "allow"},
            {"domain": "network", "pattern": f"net:127.0.0.1:{port}", "decision": "allow"}]}}), encoding="utf-8")

        def run(tool: str) -> Result:
            return agent_run("--sandbox", "off", "--policy", str(policy), "--timeout", str(TIMEOUT),
                             "--workspace", str(tmp_path / tool), str(tmp_path / tool / "task.md"),
                             timeout=HANG_BOUND)

        with ThreadPoolExecutor(len(tasks)) as pool:
            results = dict(zip(tasks, pool.map(run, tasks), strict=True))
    grep = _ended_by_the_deadline(results["grep"], tmp_path / "grep", "grep")
    assert grep["details"]["stopped"] == "the run's time is up"
    glob = _ended_by_the_deadline(results["glob"], tmp_path / "glob", "glob")
    assert json.loads(glob["content"])["error"]["type"] == "Timeout"
    fetch = _ended_by_the_deadline(results["web_fetch"], tmp_path / "web_fetch", "web_fetch")
    assert json.loads(fetch["content"])["error"]["type"] == "Timeout"
