"""Lifecycle hooks (issue 45, docs/hooks.md) through the real CLI against the scripted model server: the policy's
`hooks` section in Claude Code's shape; hooks only narrow; they run as their own principal in the sandbox."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fakes.openai_server import reply

# Claude Code's own example of a PreToolUse guard, as its docs print it: it reads tool_input.command from stdin
# and exits 2 with the reason on stderr.
CLAUDE_GUARD = """\
import json, re, sys
data = json.load(sys.stdin)
command = data.get("tool_input", {}).get("command", "")
if re.search(r"\\bgrep\\b(?!.*\\|)", command):
    print("Use 'rg' (ripgrep) instead of 'grep' for better performance and features", file=sys.stderr)
    sys.exit(2)
sys.exit(0)
"""


def _policy(tmp_path: Path, hooks: dict, rules: list | None = None, **sections: dict) -> str:
    path = tmp_path / "policy.jsonc"
    path.write_text(json.dumps({"extends": "default", "permission": {"rules": rules or [
        {"domain": "bash", "pattern": "*", "decision": "allow"},
        {"domain": "edit", "pattern": "**", "decision": "allow"}]}, "hooks": hooks, **sections}))
    return str(path)


def _script(workspace: Path, name: str, text: str) -> str:
    (workspace / "hooks").mkdir(exist_ok=True)
    (workspace / "hooks" / name).write_text(text)
    return f"python3 hooks/{name}"


def _tool_messages(request: dict) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


def test_a_claude_code_guard_exiting_2_blocks_an_allowed_bash_call_and_the_model_sees_why(
        fake, workspace, agent_run, tmp_path):
    guard = _script(workspace, "guard.py", CLAUDE_GUARD)
    policy = _policy(tmp_path, {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": guard}]}]})
    fake.add(reply(calls=[("bash", {"command": "grep -r x . > found.txt"}), ("bash", {"command": "echo fine"})]),
             reply("done"))
    r = agent_run("--policy", policy, "task.md")
    assert r.code == 3, r.stderr  # a hook's refusal is the call's denial
    assert not (workspace / "found.txt").exists()
    refused, ran = _tool_messages(fake.requests[1])
    assert "Use 'rg' (ripgrep) instead of 'grep'" in refused and "PreToolUse hook" in refused
    assert ran.strip().startswith("fine")
    finished = r.of_type("hook_finished")
    assert [(h["event"], h["exit_code"], h["decision"]) for h in finished] == [("PreToolUse", 2, "block"),
                                                                             ("PreToolUse", 0, None)]
    denial, = r.summary["denials"]
    assert denial["call_id"] == "call_1_0"
    assert r.summary["tool_calls"] == 2  # hooks are not tool calls
    audit = [json.loads(line) for line in (r.run_dir / "audit.jsonl").read_text().splitlines()]
    assert [(a["decision"], [(h["event"], h["exit_code"], h["decision"]) for h in a["hooks"]]) for a in audit] == [
        ("deny", [("PreToolUse", 2, "block")]), ("allow", [("PreToolUse", 0, None)])]


def test_a_hooks_allow_does_not_run_a_call_the_policy_denies(fake, workspace, agent_run, tmp_path):
    allow = _script(workspace, "allow.py", "import json\nprint(json.dumps({'hookSpecificOutput': "
                    "{'hookEventName': 'PreToolUse', 'permissionDecision': 'allow'}}))\n")
    policy = _policy(tmp_path, {"PreToolUse": [{"matcher": ".*", "hooks": [{"type": "command", "command": allow}]}]},
                     rules=[{"domain": "bash", "pattern": "echo *", "decision": "allow"},
                            {"domain": "bash", "pattern": "touch *", "decision": "deny"}])
    fake.add(reply(calls=[("bash", {"command": "touch made.txt"}), ("bash", {"command": "echo hi"})]), reply("ok"))
    r = agent_run("--policy", policy, "task.md")
    assert r.code == 3, r.stderr
    assert not (workspace / "made.txt").exists()
    assert "policy denies" in _tool_messages(fake.requests[1])[0]
    allowed, = r.of_type("hook_finished")  # the denied call's hooks never run: only narrowing is theirs
    assert allowed["call_id"] == "call_1_1" and allowed["decision"] == "allow"


FORMATTER = """\
import json, sys
data = json.load(sys.stdin)
path = data["tool_input"]["file_path"]
with open(path) as f:
    text = f.read()
with open(path, "w") as f:
    f.write(text.upper())
print(json.dumps({"hookSpecificOutput": {"hookEventName": "PostToolUse",
                                         "additionalContext": "formatted " + data["claude_tool_name"]}}))
"""


def test_a_post_tool_use_formatter_changes_the_file_and_its_context_reaches_the_next_request(
        fake, workspace, agent_run, tmp_path):
    formatter = _script(workspace, "fmt.py", FORMATTER)
    policy = _policy(tmp_path, {"PostToolUse": [{"matcher": "Write|Edit",
                                                 "hooks": [{"type": "command", "command": formatter}]}]})
    fake.add(reply(calls=[("write", {"path": "a.txt", "content": "hello\n"})]), reply("done"))
    r = agent_run("--policy", policy, "task.md")
    assert r.code == 0, r.stderr
    assert (workspace / "a.txt").read_text() == "HELLO\n"
    message, = _tool_messages(fake.requests[1])
    assert message.endswith("formatted Write")


def test_a_hook_that_hangs_is_killed_at_its_timeout_and_the_call_goes_on(fake, workspace, agent_run, tmp_path):
    policy = _policy(tmp_path, {"PreToolUse": [{"hooks": [{"type": "command", "command": "sleep 60",
                                                           "timeout": 1}]}]})
    fake.add(reply(calls=[("bash", {"command": "echo ran"})]), reply("done"))
    r = agent_run("--policy", policy, "task.md")
    assert r.code == 0, r.stderr
    failed, = [w for w in r.of_type("warning") if w["code"] == "hook_failed"]
    assert "killed at its timeout (1s)" in failed["message"]
    assert "  hook PreToolUse sleep 60 -> failed (killed at its timeout (1s)): going on (" in r.stderr
    finished, = r.of_type("hook_finished")
    assert finished["exit_code"] is None and finished["duration_s"] < 30
    assert _tool_messages(fake.requests[1])[0].startswith("ran")


PROBE = """\
import json, os, socket, sys
port = int(sys.argv[1])
try:
    socket.create_connection(("127.0.0.1", port), timeout=3).close()
    net = "reached"
except OSError:
    net = "unreachable"
key = os.environ.get("OPENAI_API_KEY", "absent")
print(json.dumps({"hookSpecificOutput": {"additionalContext": f"net={net} key={key} home={os.environ['HOME']}"}}))
"""


@pytest.mark.usefixtures("sandbox_available")
def test_a_hook_cannot_reach_the_network_or_read_the_api_key(fake, workspace, agent_run, tmp_path):
    port = fake.base_url.split(":")[-1].split("/")[0]
    probe = _script(workspace, "probe.py", PROBE) + f" {port}"
    policy = _policy(tmp_path, {"PostToolUse": [{"hooks": [{"type": "command", "command": probe}]}]})
    fake.add(reply(calls=[("bash", {"command": "echo x"})]), reply("done"))
    r = agent_run("--sandbox", "required", "--policy", policy, "task.md")
    assert r.code == 0, r.stderr
    message, = _tool_messages(fake.requests[1])
    assert "net=unreachable key=absent" in message
    assert "sk-test" not in message and f"home={workspace}" not in message


def test_policy_check_locates_each_problem_of_the_hooks_section(tmp_path):
    from click.testing import CliRunner

    from runner.cli.group import cli

    text = ('{\n  "hooks": {\n'
            '    "PreToolUse": [{"matcher": "(bash", "hooks": [{"type": "command", "command": "/no/such/guard"}]}],\n'
            '    "Stop": [{"hooks": [{"type": "command", "command": "make test"}]}],\n'
            '    "OnAnswer": []\n  }\n}\n')
    path = tmp_path / "p.jsonc"
    path.write_text(text)
    result = CliRunner().invoke(cli, ["policy", "check", str(path)])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    rows = text.splitlines()
    at = [[str(n), str(rows[n - 1].index(needle) + 1)] for n, needle in (
        (3, '"(bash"'), (3, '"/no/such/guard"'), (4, '"make test"'), (5, '"OnAnswer"'))]
    assert [line.split(": ", 1)[0].rsplit(":", 2)[1:] for line in lines] == at
    assert "invalid regex '(bash'" in lines[0] and "no such program: /no/such/guard" in lines[1]
    assert "`make` runs what a workspace manifest declares" in lines[2]
    assert "unknown key 'OnAnswer' in hooks" in lines[3]


def test_hooks_of_an_extended_policy_run_first_and_an_untrusted_tasks_hooks_are_ignored(
        fake, workspace, agent_run, tmp_path):
    base = tmp_path / "base.jsonc"
    base.write_text(json.dumps({"extends": "default", "hooks": {"PreToolUse": [
        {"hooks": [{"type": "command", "command": "echo base"}]}]}}))
    policy = tmp_path / "policy.jsonc"
    policy.write_text(json.dumps({"extends": str(base), "permission": {"rules": [
        {"domain": "bash", "pattern": "*", "decision": "allow"}]}, "hooks": {"PreToolUse": [
            {"hooks": [{"type": "command", "command": "echo own"}]}]}}))
    (workspace / "task-policy.jsonc").write_text(json.dumps({"permission": {"rules": [
        {"domain": "bash", "pattern": "*", "decision": "allow"}]}, "hooks": {"PreToolUse": [
        {"hooks": [{"type": "command", "command": "exit 2"}]}]}}))
    (workspace / "task.md").write_text("---\npolicy: task-policy.jsonc\n---\nDo it.\n")
    fake.add(reply(calls=[("bash", {"command": "echo ran"})]), reply("done"))
    r = agent_run("--policy", str(policy), "task.md")
    assert r.code == 0, r.stderr
    assert [h["command"] for h in r.of_type("hook_started")] == ["echo base", "echo own"]
    ignored, = [w for w in r.of_type("warning") if w["code"] == "hooks_ignored"]
    assert "task-policy.jsonc" in ignored["message"] and "hooks section is ignored" in r.stderr


def test_a_stop_hook_refuses_the_answer_until_a_file_exists_then_lets_it_through(fake, workspace, agent_run, tmp_path):
    gate = "test -f done.txt || { echo 'create done.txt first' >&2; exit 2; }"
    policy = _policy(tmp_path, {"Stop": [{"hooks": [{"type": "command", "command": gate}]}]})
    fake.add(reply("finished"), reply(calls=[("write", {"path": "done.txt", "content": "ok\n"})]), reply("finished"))
    r = agent_run("--policy", policy, "task.md")
    assert r.code == 0, r.stderr
    assert r.stdout.strip() == "finished" and len(fake.requests) == 3
    told, = r.of_type("user_message")
    assert told["reason"] == "stop_hook" and "create done.txt first" in told["content"]
    assert fake.requests[1]["messages"][-1] == {"role": "user", "content": told["content"]}
    assert [h["decision"] for h in r.of_type("hook_finished")] == ["block", None]


def test_a_stop_hook_never_satisfied_ends_the_run_exit_1_after_3_blocks(fake, workspace, agent_run, tmp_path):
    policy = _policy(tmp_path, {"Stop": [{"hooks": [{"type": "command", "command": "echo 'tests fail' >&2; exit 2"}]}]})
    fake.add(*(reply("finished") for _ in range(4)))
    r = agent_run("--policy", policy, "task.md")
    assert r.code == 1, r.stderr
    reason = r.summary["reason"]
    assert "Stop[0] hook `echo 'tests fail' >&2; exit 2` refused the answer 4 times (maxBlocks 3)" in reason
    assert len(r.of_type("user_message")) == 3 and len(fake.requests) == 4
    assert r.stderr.count("  hook Stop echo 'tests fail' >&2; exit 2 -> block (") == 4


def test_session_start_context_is_in_the_first_prompt_and_a_resume_replays_it_without_running_it(
        fake, workspace, agent_run, tmp_path):
    policy = _policy(tmp_path, {"SessionStart": [{"hooks": [{"type": "command",
                                                            "command": "echo 'the build uses make'; date +%N"}]}]})
    fake.add(reply("first"), reply("second"))
    first = agent_run("--policy", policy, "task.md")
    assert first.code == 0, first.stderr
    system = fake.requests[0]["messages"][0]["content"]
    assert system.endswith("SessionStart hooks\n\nthe build uses make\n" + system.rsplit("\n", 1)[1])
    assert [h["event"] for h in first.of_type("hook_finished")] == ["SessionStart"]
    again = agent_run("resume", str(first.run_dir), "--policy", policy, "go on")
    assert again.code == 0, again.stderr
    assert fake.requests[1]["messages"][:2] == fake.requests[0]["messages"][:2]  # byte-stable prefix
    assert not again.of_type("hook_started")


def test_replay_approve_runs_the_refusing_hook_again_unless_skip_hooks(fake, workspace, agent_run, tmp_path):
    import shlex

    guard = "echo 'not today' >&2; exit 2"
    policy = _policy(tmp_path, {"PreToolUse": [{"hooks": [{"type": "command", "command": guard}]}]})
    fake.add(reply(calls=[("bash", {"command": "echo ran > ran.txt"})]), reply("done"))
    r = agent_run("--policy", policy, "task.md")
    assert r.code == 3, r.stderr
    replay = shlex.split(r.summary["denials"][0]["replay"])[1:]
    again = agent_run(*replay)
    assert again.code == 3 and not (workspace / "ran.txt").exists()  # the approval answers the policy, not the hook
    assert [h["decision"] for h in again.of_type("hook_finished")] == ["block"]
    skipped = agent_run(*replay, "--skip-hooks")
    assert skipped.code == 0, skipped.stderr
    assert (workspace / "ran.txt").read_text() == "ran\n" and not skipped.of_type("hook_started")
    assert [w["code"] for w in skipped.of_type("warning")] == ["hooks_skipped"]


def test_policy_explain_shows_the_hooks_that_would_run(workspace, agent_run, tmp_path):
    policy = _policy(tmp_path, {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "g"}]},
                                               {"matcher": "Write", "hooks": [{"type": "command", "command": "w"}]}],
                                "PostToolUse": [{"hooks": [{"type": "command", "command": "p"}]}]})
    r = agent_run("policy", "explain", "--policy", policy, "--json", "bash", "echo hi")
    assert r.code == 0, r.stderr
    assert [(h["event"], h["command"], h["tools"]) for h in json.loads(r.stdout)["hooks"]] == [
        ("PreToolUse", "g", ["bash"]), ("PostToolUse", "p", ["bash"])]
    text = agent_run("policy", "explain", "--policy", policy, "bash", "echo hi").stdout
    assert "hooks:\n  PreToolUse [Bash] g (bash)\n  PostToolUse [*] p (bash)" in text


def test_a_hook_program_in_the_workspace_and_its_directory_are_protected(fake, workspace, agent_run, tmp_path):
    guard = _script(workspace, "guard.py", "import helper\n")
    (workspace / "hooks" / "helper.py").write_text("")
    policy = _policy(tmp_path, {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": guard}]}]})
    fake.add(reply(calls=[("write", {"path": "hooks/guard.py", "content": "pass\n"}),
                          ("write", {"path": "hooks/helper.py", "content": "import os\n"}),
                          ("bash", {"command": "echo x > hooks/helper.py"})]), reply("done"))
    r = agent_run("--policy", policy, "task.md")
    assert r.code == 3, r.stderr
    assert (workspace / "hooks" / "guard.py").read_text() == "import helper\n"
    assert (workspace / "hooks" / "helper.py").read_text() == ""
    denied = [d["call_id"] for d in r.summary["denials"]]
    assert denied == ["call_1_0", "call_1_1", "call_1_2"]
    assert "hard limit" in r.of_type("permission_decision")[0]["rule"]["file"]


def test_a_subagent_stop_hook_refuses_a_childs_answer_and_names_the_child(fake, workspace, agent_run, tmp_path):
    child = "CHILD-SUBTASK"
    gate = ("python3 -c \"import json, sys; d = json.load(sys.stdin); a = d['last_assistant_message'];"
            " sys.exit(0 if 'checked' in a else (print('say checked, ' + d['agent']['id'], file=sys.stderr) or 2))\"")
    policy = _policy(tmp_path, {"SubagentStop": [{"hooks": [{"type": "command", "command": gate}]}]},
                     rules=[{"domain": "task", "pattern": "agent:**", "decision": "allow"}],
                     risk={"rules": [{"domain": "task", "pattern": "agent:**", "level": "medium"}]})
    fake.add(reply(calls=[("task", {"description": "subtask", "prompt": f"{child}: look"})]), reply("parent done"))
    fake.route(child, reply("looked"), reply("looked and checked"))
    r = agent_run("--policy", policy, "task.md")
    assert r.code == 0, r.stderr
    told, = r.of_type("user_message")
    assert told["agent"]["id"] == "a1" and told["reason"] == "stop_hook" and "say checked, a1" in told["content"]
    assert _tool_messages(fake.requests[-1]) == ["looked and checked"]
    assert [h["event"] for h in r.of_type("hook_finished")] == ["SubagentStop", "SubagentStop"]


REACH = """\
import json, sys, urllib.error, urllib.request
def reach(url):
    try:
        urllib.request.urlopen(url, timeout=5)
    except urllib.error.HTTPError as e:  # the scripted server answers a GET 501; the proxy refuses with another
        return "reached" if e.code == 501 else "refused"
    except OSError:
        return "refused"
    return "reached"
print(json.dumps({"hookSpecificOutput": {"additionalContext": " ".join(reach(u) for u in sys.argv[1:])}}))
"""


@pytest.mark.usefixtures("sandbox_available")
def test_a_hook_reaches_only_the_hosts_its_entry_names_and_the_policy_allows(fake, workspace, agent_run, tmp_path):
    port = fake.base_url.split(":")[-1].split("/")[0]
    probe = _script(workspace, "reach.py", REACH) + f" http://127.0.0.1:{port}/ http://localhost:{port}/"
    policy = _policy(tmp_path, {"PostToolUse": [{"hooks": [{"type": "command", "command": probe,
                                                            "network": ["127.0.0.1", "localhost"]}]}]},
                     rules=[{"domain": "bash", "pattern": "*", "decision": "allow"},
                            {"domain": "network", "pattern": f"net:127.0.0.1:{port}", "decision": "allow"}])
    fake.add(reply(calls=[("bash", {"command": "echo x"})]), reply("done"))
    r = agent_run("--sandbox", "required", "--policy", policy, "task.md")
    assert r.code == 3, r.stderr  # a refused connection is a denial, as a command's is
    assert [d["call_id"] for d in r.summary["denials"]] == ["hook"]
    message, = _tool_messages(fake.requests[1])
    assert message.endswith("reached refused")  # named by the hook and allowed; named, and the policy refuses
    assert [(n["host"], n["decision"]) for n in r.of_type("network_request")] == [("127.0.0.1", "allow"),
                                                                                 ("localhost", "deny")]


def test_a_hooks_time_is_counted_in_the_runs_timeout_and_it_dies_with_it(fake, workspace, agent_run, tmp_path):
    import os

    hang = "echo $$ > hook.pid; exec sleep 600"
    policy = _policy(tmp_path, {"PreToolUse": [{"hooks": [{"type": "command", "command": hang, "writes": True}]}]})
    fake.add(reply(calls=[("bash", {"command": "echo ran"})]), reply("done"))
    r = agent_run("--sandbox", "off", "--timeout", "2", "--policy", policy, "task.md")
    assert r.summary["status"] == "budget_exhausted", r.stderr
    failed, = [w for w in r.of_type("warning") if w["code"] == "hook_failed"]
    assert "killed at its timeout" in failed["message"] and "(60s)" not in failed["message"]  # not its own 60 s
    pid = int((workspace / "hook.pid").read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_a_hook_printing_16_mib_keeps_at_most_the_cap_and_the_run_says_its_answer_was_too_long(
        fake, workspace, agent_run, tmp_path):
    from runner.run.hooks import OUTPUT_CAP

    # It floods its stdout, then says on stderr how much of it was kept where its stdout went (fd 3 a copy of it:
    # a file's size, or 0 for a pipe read as it comes).
    flood = "exec 3>&1; yes | head -c 16M; stat -L -c 'kept=%s' /proc/self/fd/3 >&2"
    policy = _policy(tmp_path, {"PreToolUse": [{"hooks": [{"type": "command", "command": flood}]}]})
    fake.add(reply(calls=[("bash", {"command": "echo ran"})]), reply("done"))
    r = agent_run("--policy", policy, "task.md")
    assert r.code == 0, r.stderr
    finished, = r.of_type("hook_finished")
    assert int(finished["output_tail"].rsplit("kept=", 1)[1].split()[0]) <= OUTPUT_CAP
    assert sum(f.stat().st_size for f in r.run_dir.rglob("*") if f.is_file()) < OUTPUT_CAP
    failed, = [w for w in r.of_type("warning") if w["code"] == "hook_failed"]
    assert f"its stdout passed {OUTPUT_CAP >> 20} MiB ({16 << 20} bytes)" in failed["message"]
    assert finished["exit_code"] == 0 and _tool_messages(fake.requests[1])[0].startswith("ran")  # onError ignore
