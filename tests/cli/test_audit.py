"""audit.jsonl (issue 34): one record per tool call, valid against runner/schemas/audit.schema.json, in runs with
denials, --approve approvals, a replayed call, an interrupt and a child agent; sealed; `runs show --audit`."""

from __future__ import annotations

import hashlib
import json
import shlex
import signal
import subprocess

from tests.cli.test_runs_agents import ALLOW_TASK, CHILD
from tests.conftest import agent_run_argv, clean_env
from tests.fakes.audit import audit_of
from tests.fakes.openai_server import reply
from tests.fakes.site import loopback_site
from tests.fakes.wait import HANG_S, until


def _read_and_echo(fake, workspace):
    (workspace / "a.txt").write_text("hello\n", encoding="utf-8")
    fake.add(reply(calls=[("read", {"path": "a.txt"}), ("bash", {"command": "echo hi"})]), reply("done"))


def test_a_denial_and_an_approval_each_have_one_record(fake, workspace, agent_run):
    _read_and_echo(fake, workspace)
    denied = agent_run("--sandbox", "off", "task.md")
    assert denied.code == 3, denied.stderr
    read, bash = audit_of(denied.run_dir)
    assert (read["tool"], read["agent"], read["risk"], read["decision"], read["approval_scope"], read["outcome"]) == (
        "read", "main", "low", "allow", "policy", "ok")
    assert read["rule"].startswith("default:") and read["targets"][0]["target"] == "workspace:a.txt"
    result = denied.of_type("tool_result")[0]
    assert (read["output_bytes"], read["output_sha256"]) == (result["bytes"], result["sha256"])
    assert (bash["risk"], bash["decision"], bash["outcome"], bash["error_type"]) == (
        "medium", "deny", "denied", "ApprovalRequired")
    assert [(d["risk"], d["approval_scope"]) for d in denied.of_type("permission_decision")] == [
        ("low", "policy"), ("medium", "policy")]
    assert "audit.jsonl" in denied.summary["integrity"]["files"]  # sealed with the run

    _read_and_echo(fake, workspace)
    approved = agent_run("--sandbox", "off", "--approve", "bash:shell:echo hi", "task.md")
    assert approved.code == 0, approved.stderr
    _, bash = audit_of(approved.run_dir)
    assert (bash["decision"], bash["approval_scope"], bash["rule"], bash["outcome"], bash["exit_code"]) == (
        "allow", "run", "--approve#0", "ok", 0)
    sha = hashlib.sha256((approved.run_dir / "audit.jsonl").read_bytes()).hexdigest()
    assert approved.summary["integrity"]["files"]["audit.jsonl"] == sha

    shown = agent_run("runs", "show", "--audit", str(approved.run_dir))
    assert shown.code == 0, shown.stderr
    header, _first, second = shown.stdout.splitlines()
    assert header.split()[:8] == ["seq", "call", "agent", "tool", "risk", "decision", "scope", "rule"]
    assert second.split()[:8] == ["2", bash["call_id"], "main", "bash", "medium", "allow", "run", "--approve#0"]
    as_json = agent_run("runs", "show", "--audit", "--json", str(approved.run_dir))
    assert json.loads(as_json.stdout) == audit_of(approved.run_dir)


def test_a_replayed_call_is_approved_for_that_call(fake, workspace, agent_run):
    fake.add(reply(calls=[("bash", {"command": "echo hi > out.txt"})]), reply("needs approval"))
    first = agent_run("--sandbox", "off", "task.md")
    assert first.code == 3
    (record,) = audit_of(first.run_dir)
    assert record["outcome"] == "denied"
    argv = shlex.split(first.summary["denials"][0]["replay"])
    assert "--call" in argv
    replayed = agent_run(*argv[1:], "--sandbox", "off")
    assert replayed.code == 0, replayed.stderr
    (record,) = audit_of(replayed.run_dir)
    assert (record["call_id"], record["decision"], record["approval_scope"], record["outcome"]) == (
        "call_1_0", "allow", "call", "ok")
    assert replayed.of_type("permission_decision")[0]["approval_scope"] == "call"


def test_a_child_agents_calls_are_its_own_records(fake, workspace, agent_run):
    (workspace / "p.jsonc").write_text(ALLOW_TASK, encoding="utf-8")
    (workspace / "a.txt").write_text("old\n", encoding="utf-8")
    fake.add(reply(calls=[("task", {"description": "fix a", "prompt": f"{CHILD}: fix a.txt"})]), reply("parent done"))
    fake.route(CHILD, reply(calls=[("read", {"path": "a.txt"}), ("bash", {"command": "touch x"})]),
               reply("child answer"))
    r = agent_run("--policy", "p.jsonc", "task.md")
    assert r.code == 3, r.stderr
    records = audit_of(r.run_dir)
    assert [(x["call_id"], x["agent"], x["tool"], x["outcome"]) for x in records] == [
        ("a1:call_1_0", "a1", "read", "ok"), ("a1:call_1_1", "a1", "bash", "denied"),
        ("call_1_0", "main", "task", "ok")]
    task = records[-1]
    # ALLOW_TASK delegates on purpose: its risk rule makes the child medium (the shipped askAtOrAbove is high)
    assert (task["risk"], task["approval_scope"], task["rule"]) == ("medium", "policy", "p.jsonc:3")


def test_a_call_cut_off_by_an_interrupt_has_its_one_record(fake, workspace):
    fake.add(reply(calls=[("read", {"path": "task.md"}), ("bash", {"command": "echo started > s.txt; sleep 300"})]),
             reply("never"))
    env = clean_env(OPENAI_BASE_URL=fake.base_url, OPENAI_API_KEY="sk-test")
    proc = subprocess.Popen([*agent_run_argv(), "--sandbox", "off", "--approve", "bash:shell:*", "task.md"],
                            cwd=workspace, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    started = workspace / "s.txt"
    until(lambda: started.is_file() and started.read_text().endswith("\n"), "the command to start")
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=HANG_S) == 130
    (run_dir,) = (workspace / ".agent-run" / "runs").iterdir()
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "interrupted"
    read, bash = audit_of(run_dir)
    assert read["outcome"] == "ok"
    assert (bash["tool"], bash["decision"], bash["outcome"], bash["output_sha256"]) == (
        "bash", "allow", "interrupted", None)
    assert summary["integrity"]["files"]["audit.jsonl"] == hashlib.sha256(
        (run_dir / "audit.jsonl").read_bytes()).hexdigest()


# Issue 41 item 3: a call's line holds every decision it met while it ran (`met`), and a denial there makes the
# line's `decision` deny and its outcome denied, as summary.json counts it.

FETCH_BOTH = ("python3 -c \"import urllib.request as u\nfor h in ('127.0.0.1', 'localhost'):\n"
              "    try: print(u.urlopen(f'http://{h}:%d/x', timeout=10).read().decode())\n"
              "    except Exception as e: print(h, e)\"")


def _met(record) -> list[tuple[str, str, str]]:
    return [(m["domain"], m["target"], m["decision"]) for m in record["met"]]


def test_a_commands_connections_are_in_its_line_and_a_refused_one_denies_it(fake, workspace, agent_run,
                                                                            sandbox_available):
    with loopback_site(b"hello from the allowed host") as site:
        port = site.server_port
        (workspace / "p.jsonc").write_text(json.dumps({"extends": "ci", "sandbox": {
            "mode": "required", "network": {"allow": [f"127.0.0.1:{port}"]}}}))
        fake.add(reply(calls=[("bash", {"command": FETCH_BOTH % port})]), reply("done"))
        r = agent_run("--policy", "p.jsonc", "--approve", "bash:shell:python3 *", "task.md")
        assert site.paths == ["/x"]
    assert r.code == 3, r.stderr
    assert "hello from the allowed host" in r.of_type("tool_result")[0]["content"]
    (bash,) = audit_of(r.run_dir)
    assert (bash["decision"], bash["outcome"], bash["exit_code"], bash["rule"]) == ("deny", "denied", 0, "--approve#0")
    assert _met(bash) == [("network", f"net:127.0.0.1:{port}", "allow"), ("network", f"net:localhost:{port}", "ask")]
    assert bash["met"][0]["rule"] == "sandbox.network#0" and bash["met"][1]["rule"].startswith("default:")
    assert [(d["call_id"], d["target"]) for d in r.summary["denials"]] == [("call_1_0", f"net:localhost:{port}")]
    shown = agent_run("runs", "show", "--audit", str(r.run_dir))
    assert shown.code == 0, shown.stderr
    header, row = shown.stdout.splitlines()
    assert header.split()[-1] == "met" and row.split()[5] == "deny"
    assert row.endswith(f"net:127.0.0.1:{port} allow, net:localhost:{port} ask"), row


def test_a_fetchs_redirects_are_in_its_line(fake, workspace, agent_run):
    with loopback_site(b"the page") as site:
        port = site.server_port
        followed = f"http://127.0.0.1:{port}/open?to=http://localhost:{port}/x"
        refused = f"http://127.0.0.1:{port}/open?to=http://127.0.0.2:{port}/y"
        fake.add(reply(calls=[("web_fetch", {"url": followed}), ("web_fetch", {"url": refused})]), reply("done"))
        r = agent_run("--sandbox", "off", "--approve", f"network:net:127.0.0.1:{port}", "--approve",
                      f"network:net:localhost:{port}", "task.md")
    assert r.code == 3, r.stderr
    first, second = audit_of(r.run_dir)
    assert (second["decision"], second["outcome"], second["error_type"]) == ("deny", "denied", "ApprovalRequired")
    assert _met(first) == [("web_fetch", f"url:http://localhost:{port}/x", "allow"),
                           ("network", f"net:localhost:{port}", "allow")]
    assert first["met"][1]["rule"] == "--approve#1"
    assert (first["decision"], first["outcome"]) == ("allow", "ok")
    assert _met(second) == [("web_fetch", f"url:http://127.0.0.2:{port}/y", "allow"),
                            ("network", f"net:127.0.0.2:{port}", "ask")]
    assert [t["target"] for t in second["targets"]] == [f"url:{refused}", f"net:127.0.0.1:{port}"]
