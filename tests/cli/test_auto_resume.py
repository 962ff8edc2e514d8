"""`--auto-resume N` (issue 46 item 2): a run that ended on a transient cause (summary `cause`) is resumed by
agent-run itself, each resume a new run directory in the same lineage, within the first run's budgets."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

from tests.conftest import agent_run_argv, clean_env
from tests.fakes.openai_server import error, reply
from tests.fakes.wait import HANG_S, until
from tests.fakes.zygote import popen

ONE_RETRY = {"AGENT_RUN_MAX_RETRIES": "1"}  # two 5xx in a row: the provider is down for this run (exit 6)


def _started(run_dir: Path) -> dict:
    events = map(json.loads, (run_dir / "events.jsonl").read_text(encoding="utf-8").splitlines())
    return next(e for e in events if e["type"] == "run_started")


def test_a_transient_outage_is_resumed_once_and_the_chain_ends_0(fake, workspace, agent_run):
    fake.add(error(503), error(500), reply("done"))
    r = agent_run("task.md", "--auto-resume", "2", env=ONE_RETRY)
    assert r.code == 0, r.stderr
    first, last = sorted(r.new_dirs, key=lambda p: p.name)
    assert len(r.new_dirs) == 2
    ended = json.loads((first / "summary.json").read_text())
    assert ended["exit_code"] == 6 and ended["cause"] == "provider_down"
    assert _started(last)["resumed_from"]["kind"] == "auto"
    assert _started(last)["resumed_from"]["run_id"] == first.name
    summary = json.loads((last / "summary.json").read_text())
    assert summary["cause"] == "completed" and summary["answer"] == "done"
    assert summary["auto_resume"]["chain"] == [first.name, last.name]
    assert "auto-resume 1/2" in r.stderr
    # The model is told the chain goes on within the first run's budgets (a resume by hand gets fresh ones).
    note = fake.requests[-1]["messages"][-1]["content"]
    assert note.endswith("It is resumed now within what is left of its budgets.]"), note


def test_a_denied_run_is_never_auto_resumed_and_its_failures_carry_their_class(fake, workspace, agent_run):
    fake.add(reply(calls=[("read", {"path": "missing.txt"})]),
             reply(calls=[("bash", {"command": "echo hi > out.txt"})]), reply("stopped"), reply("again"))
    r = agent_run("task.md", "--auto-resume", "3", env=ONE_RETRY)
    assert r.code == 3, r.stderr
    assert r.summary["cause"] == "denied" and len(fake.requests) == 3  # one run dir (r.run_dir), never resumed
    # A failure's class is the log's (tool_result, audit.jsonl), never in what the model reads.
    results = {e["tool"]: e for e in r.of_type("tool_result")}
    assert (results["read"]["error_class"], results["bash"]["error_class"]) == ("fixable", "fatal")
    audit = {a["tool"]: a for a in map(json.loads, (r.run_dir / "audit.jsonl").read_text().splitlines())}
    assert (audit["read"]["error_class"], audit["bash"]["error_class"]) == ("fixable", "fatal")
    assert all("error_class" not in m.get("content", "") for m in fake.requests[-1]["messages"] if m["role"] == "tool")


def test_the_chain_counts_turns_against_the_first_runs_max_turns(fake, workspace, agent_run):
    # Turn 1 lists; turn 2's server is down (the run ends exit 6 after one turn); the resume has one turn of the
    # first run's two left, which lists again: turn 3 would pass --max-turns 2 (a fresh budget would answer).
    fake.add(reply(calls=[("list", {"path": "."})]), error(500), error(500),
             reply(calls=[("list", {"path": "."})]), reply("done"))
    r = agent_run("task.md", "--auto-resume", "1", "--max-turns", "2", env=ONE_RETRY)
    assert r.code == 5, r.stderr
    assert len(r.new_dirs) == 2 and len(fake.requests) == 4
    last = max(r.new_dirs, key=lambda p: p.name)
    summary = json.loads((last / "summary.json").read_text())
    b = summary["budget"]
    assert (summary["cause"], b["name"], b["limit"], b["used"]) == ("budget", "max_turns", 2, 2)  # as one run's


def test_a_cut_off_answer_broke_the_protocol_and_is_resumed(fake, workspace, agent_run):
    fake.add(reply("half an ans", finish="length"), reply("the whole answer"))
    r = agent_run("task.md", "--auto-resume", "1")
    assert r.code == 0, r.stderr
    first = min(r.new_dirs, key=lambda p: p.name)
    ended = json.loads((first / "summary.json").read_text())
    assert (ended["exit_code"], ended["cause"]) == (1, "protocol")


def test_sigint_during_the_backoff_ends_the_chain_at_once(fake, workspace, agent_run_zygote):
    fake.add(error(500), reply("never asked"))
    env = clean_env(OPENAI_BASE_URL=fake.base_url, OPENAI_API_KEY="sk-test", AGENT_RUN_MAX_RETRIES="0",
                    AGENT_RUN_RETRY_BASE_S="600")  # the backoff: ten minutes, unless the signal ends it
    err = workspace.parent / "stderr.txt"
    with err.open("w") as sink:
        proc = popen(agent_run_zygote, [*agent_run_argv(), "--auto-resume", "1", "task.md"], cwd=workspace, env=env,
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=sink)
        until(lambda: "auto-resume 1/1" in err.read_text(), "the backoff to start")
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=HANG_S) == 130
    (run_dir,) = (workspace / ".agent-run" / "runs").iterdir()
    assert json.loads((run_dir / "summary.json").read_text())["cause"] == "provider_down"
    assert len(fake.requests) == 1 and "interrupted by SIGINT during the backoff" in err.read_text()


def test_land_lands_once_after_the_chain(fake, workspace, agent_run):
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    env = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "GIT_CONFIG_NOSYSTEM": "1"}
    (workspace / ".gitignore").write_text(".agent-run/\n")
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "start"]):
        subprocess.run([*git, *args], cwd=workspace, env=env, check=True, capture_output=True)
    fake.add(reply(calls=[("write", {"path": "new.txt", "content": "made\n"})]), error(500), error(500),
             reply("done"))
    r = agent_run("task.md", "--auto-resume", "1", "--land", "commit", "--sandbox", "off", env=ONE_RETRY)
    assert r.code == 0, r.stderr
    first, last = sorted(r.new_dirs, key=lambda p: p.name)
    assert json.loads((first / "summary.json").read_text())["land"]["landed"] is False
    assert json.loads((last / "summary.json").read_text())["land"]["landed"] is True
    log = subprocess.run([*git, "log", "--format=%H %s"], cwd=workspace, env=env, check=True, capture_output=True,
                         text=True).stdout.splitlines()
    assert len(log) == 2 and log[0].split()[0] == json.loads((last / "summary.json").read_text())["land"]["commit"]


def test_the_chain_sums_tokens_against_the_first_runs_max_tokens(fake, workspace, agent_run):
    # The first run's answer is cut off (protocol) after 5,100 of --max-tokens 5,500: the resume's next request
    # would pass the budget, so it stops before asking (a fresh budget would answer), reporting it as one run would.
    big = {"prompt_tokens": 5000, "completion_tokens": 100, "total_tokens": 5100}
    fake.add(reply("half an ans", finish="length", usage=big), reply("never"))
    r = agent_run("task.md", "--auto-resume", "1", "--max-tokens", "5500")
    assert r.code == 5, r.stderr
    assert len(r.new_dirs) == 2 and len(fake.requests) == 1
    summary = json.loads((max(r.new_dirs, key=lambda p: p.name) / "summary.json").read_text())
    b = summary["budget"]
    assert (summary["cause"], b["name"], b["limit"], b["used"]) == ("budget", "max_tokens", 5500, 5100)


def test_the_chain_sums_cost_against_the_first_runs_max_cost(fake, workspace, agent_run):
    usage = {"prompt_tokens": 1_000_000, "completion_tokens": 0, "total_tokens": 1_000_000}  # $0.15 on gpt-4o-mini
    fake.add(reply("half an ans", finish="length", usage=usage), reply("never"))
    r = agent_run("task.md", "--auto-resume", "1", "--model", "gpt-4o-mini", "--max-cost-usd", "0.15005")
    assert r.code == 5, r.stderr
    assert len(r.new_dirs) == 2 and len(fake.requests) == 1
    summary = json.loads((max(r.new_dirs, key=lambda p: p.name) / "summary.json").read_text())
    b = summary["budget"]
    assert (summary["cause"], b["name"], b["limit"], b["used"]) == ("budget", "max_cost_usd", 0.15005, 0.15)


def test_the_chain_counts_its_subagents_turns_against_the_first_runs_max_turns(fake, workspace, agent_run):
    # --max-turns is every agent's together: the first run spends 3 of 4 (the parent's delegation, the child's two
    # requests), then its server is down; the resume has one request left, not the 3 its conversation's turn suggests.
    from tests.cli.test_subagents import ALLOW_TASK, CHILD, _task
    (workspace / "p.jsonc").write_text(ALLOW_TASK, encoding="utf-8")
    fake.add(reply(calls=[_task({})]), error(500), error(500),
             reply(calls=[("list", {"path": "."})]), reply(calls=[("list", {"path": "."})]), reply("done"))
    fake.route(CHILD, reply(calls=[("list", {"path": "."})]), reply("child done"))
    r = agent_run("task.md", "--policy", "p.jsonc", "--auto-resume", "1", "--max-turns", "4", env=ONE_RETRY)
    assert r.code == 5, r.stderr
    b = json.loads((max(r.new_dirs, key=lambda p: p.name) / "summary.json").read_text())["budget"]
    assert (b["name"], b["limit"], b["used"]) == ("max_turns", 4, 4)
