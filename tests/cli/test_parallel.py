"""Calls of one reply at once (issue 28; runner/engine/batch.py), through the real CLI: `task` children and
read-only calls overlap, and everything the model and the record see is what the same run without concurrency
would give. Concurrency is observed, never timed: the scripted server and the MCP server hold each request until
the others arrive (`gather`) and say how many waited together."""

from __future__ import annotations

import json

from tests.cli.test_mcp_cli import scripted, write_config
from tests.cli.test_subagents import CHILD, _policy
from tests.fakes.openai_server import gather, reply

USAGE = {"prompt_tokens": 1000, "completion_tokens": 0, "total_tokens": 1000}


def _task(i: int) -> tuple[str, dict]:
    return ("task", {"description": f"part {i}", "prompt": f"{CHILD}-{i}: look at part {i}"})


def _four_children(fake, *, gathered: bool) -> None:
    fake.add(reply(calls=[_task(i) for i in range(4)]), reply("all four done"))
    for i in range(4):
        answer = reply(f"answer {i}")
        fake.route(f"{CHILD}-{i}", gather(4, answer) if gathered else answer)


def test_four_children_run_at_once_and_the_parent_sees_what_a_sequential_run_sees(fake, workspace, agent_run):
    _four_children(fake, gathered=True)
    r = agent_run("--policy", _policy(workspace), "task.md")
    assert r.code == 0, r.stderr
    assert fake.peak >= 3  # at least three children's requests were at the server together
    parallel = fake.requests[-1]["messages"]
    assert [m["content"] for m in parallel if m["role"] == "tool"] == [f"answer {i}" for i in range(4)]
    # Ids, call indexes and results follow the model's order, whichever child started or finished first.
    started = {e["call_id"]: e["agent"]["id"] for e in r.of_type("subagent_started")}
    assert started == {f"call_1_{i}": f"a{i + 1}" for i in range(4)}
    results = [e for e in r.of_type("tool_result") if e["agent"] is None]
    assert [(e["call_id"], e["call_index"]) for e in results] == [(f"call_1_{i}", i) for i in range(4)]
    assert [a["status"] for a in r.summary["agents"]] == ["success"] * 5
    assert [a["id"] for a in r.summary["agents"]] == ["main", "a1", "a2", "a3", "a4"]  # as a sequential run's

    _four_children(fake.restart(), gathered=False)
    sequential = agent_run("--policy", _policy(workspace), "--parallel-agents", "1", "task.md")
    assert sequential.code == 0, sequential.stderr
    assert fake.requests[-1]["messages"] == parallel  # the parent's conversation, byte for byte


def test_children_share_the_token_budget_and_stop_within_one_response_each(fake, workspace, agent_run):
    (workspace / "a.txt").write_text("".join(f"line {n}\n" for n in range(40)), encoding="utf-8")
    fake.add(reply(calls=[_task(i) for i in range(4)]), reply("unreachable"))
    for i in range(4):
        reads = [reply(calls=[("read", {"path": "a.txt", "offset": n + 1, "limit": 1})], usage=USAGE)
                 for n in range(20)]
        fake.route(f"{CHILD}-{i}", gather(4, reads[0]), *reads[1:])
    limit = 9000
    r = agent_run("--policy", _policy(workspace), "--max-tokens", str(limit), "task.md")
    assert r.code == 5, r.stderr
    summary = r.summary
    assert summary["budget"]["name"] == "max_tokens"
    used = summary["usage"]["prompt_tokens"] + summary["usage"]["completion_tokens"]
    assert used <= limit + 4 * USAGE["total_tokens"]  # the budget, plus at most one response per running child
    assert fake.peak >= 3
    children = [a for a in summary["agents"] if a["id"] != "main"]
    assert len(children) == 4 and {a["status"] for a in children} == {"stopped"}
    finished = r.of_type("subagent_finished")
    assert sorted(e["agent"]["id"] for e in finished) == ["a1", "a2", "a3", "a4"]
    assert r.events[-1]["type"] == "run_finished"  # nothing of a child after the run's end


def test_read_only_mcp_calls_run_at_once_when_the_trusted_config_says_so(fake, workspace, agent_run):
    # Four different calls: identical ones run one by one (the doom-loop guard counts repeats in order).
    calls = [("mcp__box__gather", {"count": 4, "timeout_s": 60 + i}) for i in range(4)]
    config = write_config(workspace, {"box": scripted("toolbox.py", readOnlyTools=["gather"])})
    fake.add(reply(calls=calls), reply("done"))
    r = agent_run("--mcp-config", config, "--approve", "mcp:mcp:box/*", "task.md")
    assert r.code == 0, r.stderr
    tool_messages = [m for m in fake.requests[-1]["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_messages] == [f"call_1_{i}" for i in range(4)]
    assert max(int(m["content"].split()[-1]) for m in tool_messages) >= 3

    # Not marked: one at a time, whatever the server's own annotations say.
    calls = [("mcp__box__gather", {"count": 4, "timeout_s": 0.2 + i / 10}) for i in range(2)]
    config = write_config(workspace, {"box": scripted("toolbox.py")})
    fake.add(reply(calls=calls), reply("done"))
    r = agent_run("--mcp-config", config, "--approve", "mcp:mcp:box/*", "task.md")
    assert r.code == 0, r.stderr
    assert [m["content"] for m in fake.requests[-1]["messages"] if m["role"] == "tool"] == ["peak 1", "peak 1"]


def test_a_mixed_reply_keeps_decisions_denials_and_order_as_a_sequential_run(fake, workspace, agent_run):
    for name in ("a.txt", "b.txt"):
        (workspace / name).write_text(f"{name} text\n", encoding="utf-8")
    (workspace / ".env").write_text("SECRET=1\n", encoding="utf-8")
    calls = [("read", {"path": "a.txt"}), ("grep", {"pattern": "text"}), ("read", {"path": ".env"}),
             ("read", {"path": "b.txt"}), ("write", {"path": "c.txt", "content": "c\n"}), ("glob", {"pattern": "*"}),
             ("read", {"path": "a.txt"})]
    seen = []
    for flag in ("4", "1"):
        (workspace / "c.txt").unlink(missing_ok=True)
        fake.restart().add(reply(calls=calls), reply("done"))
        r = agent_run("--parallel-calls", flag, "--approve", "edit:c.txt", "task.md")
        assert r.code == 3, r.stderr  # the .env read is denied
        decisions = [(e["call_id"], e["decision"]) for e in r.of_type("permission_decision")]
        results = [(e["call_id"], e["call_index"], e["ok"], e["sha256"]) for e in r.of_type("tool_result")]
        indexes = [e["call_index"] for e in r.of_type("tool_call")]
        seen.append((decisions, sorted(results), indexes, fake.requests[-1]["messages"],
                     [d["call_id"] for d in r.summary["denials"]]))
    assert seen[0] == seen[1]
    assert seen[0][2] == list(range(7))
    assert json.loads(seen[0][3][5]["content"])["error"]["type"] == "ApprovalRequired"


def test_an_interrupt_stops_every_running_child_and_the_record_stays_whole(fake, workspace, agent_run_zygote):
    import signal

    from tests.cli.test_replay_and_signals import _start, _wait_for_event
    from tests.fakes.openai_server import hang
    from tests.fakes.wait import HANG_S, until

    fake.add(reply(calls=[_task(i) for i in range(4)]))
    for i in range(4):
        fake.route(f"{CHILD}-{i}", hang(600))  # answers only once the test is over
    proc = _start(fake, workspace, "--policy", _policy(workspace), "task.md", zygote=agent_run_zygote)
    run_dir = _wait_for_event(workspace, "subagent_started")
    until(lambda: len(fake.requests) >= 5, "all four children's requests to reach the server")
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=HANG_S) == 143
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "interrupted"
    assert {a["id"]: a["status"] for a in summary["agents"] if a["id"] != "main"} == {
        f"a{i}": "stopped" for i in range(1, 5)}
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    assert sorted(e["agent"]["id"] for e in events if e["type"] == "subagent_finished") == ["a1", "a2", "a3", "a4"]
    assert events[-1]["type"] == "run_finished"


def test_children_calling_the_same_mcp_tool_keep_their_artifacts_apart(fake, workspace, agent_run):
    # Both children's first call is `call_1_0`: each image is kept under its child's id, none overwrites another.
    config = write_config(workspace, {"box": scripted("toolbox.py")})
    fake.add(reply(calls=[_task(i) for i in range(2)]), reply("done"))
    for i in range(2):
        fake.route(f"{CHILD}-{i}", reply(calls=[("mcp__box__picture", {})]), reply(f"answer {i}"))
    r = agent_run("--policy", _policy(workspace), "--mcp-config", config, "--approve", "mcp:mcp:box/*", "task.md")
    assert r.code == 0, r.stderr
    artifacts = sorted(p.name for p in (r.run_dir / "mcp" / "artifacts").iterdir())
    assert len(artifacts) == 4 and {a.split("-")[0] for a in artifacts} == {"a1", "a2"}, artifacts


def test_a_child_told_to_stop_does_not_sit_out_a_retry_backoff():
    # A child whose caller is ending (its group's stop) in a long backoff (a Retry-After) stops at once: the group
    # waits for it, and a run must not be held past an interrupt or leave it behind to write after its end.
    import pytest

    from runner.core.outcome import Stopped
    from runner.engine.cancel import RunCancel
    from runner.model.openai_chat import Endpoint, OpenAIChat

    caller = RunCancel()
    stop = caller.child()  # stopped through its parent: the caller's own stop
    endpoint = Endpoint(api_key="k", base_url="http://127.0.0.1:9/v1", stream=False, max_retries=4,
                        retry_base_s=1.0, retry_cap_s=600.0, request_timeout_s=5.0)
    model = OpenAIChat("m", endpoint, deadline=None, stop=stop)
    retries = []
    caller.stop()
    with pytest.raises(Stopped):
        model._wait(1, "HTTP 503", "", 60.0, 1, retries.append)
    assert [e.type for e in retries] == ["model_retry"]


def test_a_backtracking_grep_beside_a_read_still_ends_on_the_runs_clock(fake, workspace, agent_run):
    # On a worker thread SIGALRM cannot stop `re`, whose backtracking holds the GIL: the run froze past --timeout
    # and signals. grep matches with the `regex` module instead, its deadline as the timeout, the GIL released.
    (workspace / "a.txt").write_text("a" * 60 + "b\n", encoding="utf-8")
    fake.add(reply(calls=[("grep", {"pattern": "(a|aa)+$", "path": "a.txt"}), ("read", {"path": "a.txt"})]),
             reply("unreachable"))
    r = agent_run("--timeout", "2", "task.md")
    assert r.code == 5, r.stderr
    assert r.summary["budget"]["name"] == "timeout_s"
    assert [e["tool"] for e in r.of_type("tool_call")] == ["grep", "read"]  # the grep did start, beside the read
    assert r.events[-1]["type"] == "run_finished"


def test_a_child_refused_for_its_model_takes_no_id_and_no_place_under_the_limit(fake, workspace, agent_run, tmp_path):
    agents = tmp_path / "agents"
    agents.mkdir()
    (agents / "pricey.md").write_text("---\nname: pricey\ndescription: on its own model\nmodel: no-such-model-x\n---\n"
                                      "Work.\n", encoding="utf-8")
    fake.add(reply(calls=[("task", {"description": "a", "prompt": f"{CHILD}-0: x", "agent": "pricey"}),
                          _task(1)]), reply("done"))
    fake.route(f"{CHILD}-1", reply("answer 1"))
    r = agent_run("--policy", _policy(workspace), "--agents", str(agents), "--max-cost-usd", "5", "task.md")
    assert r.code == 0, r.stderr
    [refused] = [json.loads(m["content"]) for m in fake.requests[-1]["messages"] if m.get("tool_call_id") == "call_1_0"]
    assert refused["error"]["status"] == "refused"
    assert [(e["call_id"], e["agent"]["id"]) for e in r.of_type("subagent_started")] == [("call_1_1", "a1")]


def test_an_interrupt_lets_go_of_an_mcp_call_running_beside_others(fake, workspace, agent_run_zygote):
    # Beside another call, an MCP call runs on a worker thread: the signal reaches the loop, and the call, waiting on
    # a server that never answers, is let go at once instead of being waited for (up to 30 s) or for its timeout.
    import signal

    from tests.cli.test_replay_and_signals import _start, _wait_for_event
    from tests.fakes.wait import until

    config = write_config(workspace, {"box": scripted("toolbox.py", readOnlyTools=["hang", "shout"])})
    fake.add(reply(calls=[("mcp__box__hang", {}), ("mcp__box__shout", {"text": "hi"})]))
    proc = _start(fake, workspace, "--mcp-config", config, "--approve", "mcp:mcp:box/*", "task.md",
                  zygote=agent_run_zygote)
    run_dir = _wait_for_event(workspace, "tool_call")
    until(lambda: "toolbox: hanging" in (run_dir / "mcp" / "box.log").read_text(errors="replace")
          if (run_dir / "mcp" / "box.log").is_file() else False, "the hanging MCP call to reach the server")
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=20) == 143  # bounds a hang: without the fix the loop waits 30 s for the call
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "interrupted"
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    assert events[-1]["type"] == "run_finished"


def test_a_glob_walk_beside_a_read_stops_at_the_runs_clock(fake, workspace, agent_run, tmp_path):
    # A walk of `/` (half a minute here) beside a read runs on a worker, where SIGALRM cannot stop it: the walk asks
    # the run's stop and deadline at every directory instead, so the run ends on its clock, not after the walk.
    policy = tmp_path / "p.jsonc"
    policy.write_text(json.dumps({"extends": "default", "risk": {"rules": [  # high risk, allowed on purpose
        {"domain": "read", "pattern": "fs:/**", "level": "low"}]}, "permission": {"rules": [
        {"domain": "read", "pattern": "fs:/**", "decision": "allow"}]}}), encoding="utf-8")
    fake.add(reply(calls=[("glob", {"pattern": "**/no-such-name-anywhere", "path": "/"}),
                          ("read", {"path": "task.md"})]), reply("unreachable"))
    r = agent_run("--sandbox", "off", "--policy", str(policy), "--timeout", "2", "task.md",
                  timeout=20)  # bounds a hang: without the stop the run waited for the walk (~30 s here)
    assert r.code == 5, r.stderr
    assert r.summary["budget"]["name"] == "timeout_s"
    assert r.events[-1]["type"] == "run_finished"
