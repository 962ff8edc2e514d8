"""Per-agent scopes (issue 46 item 3), through the real CLI with the scripted model: a profile's `disallowedTools`
(checked before `tools`) and its `paths` scope, enforced by the policy intersection for the file tools and by the
sandbox's mounts for the child's commands; `policy explain --agent NAME` shows what a child gets."""

from __future__ import annotations

import json
import os

import pytest
from click.testing import CliRunner

from runner.cli.group import cli
from tests.cli.test_subagents import CHILD, _of_agent, _policy, _profile, _task
from tests.fakes.openai_server import reply

# Delegation and commands allowed: what narrows a child here is its profile alone.
ALLOW = """{ "extends": "default",
  "risk": { "rules": [ { "domain": "task", "pattern": "agent:**", "level": "medium" } ] },
  "permission": { "rules": [
  { "domain": "task", "pattern": "agent:**", "decision": "allow" },
  { "domain": "bash", "pattern": "shell:*", "decision": "allow" } ] } }"""


def _errors(r, tool: str) -> list[dict]:
    return [json.loads(e["content"])["error"] for e in _of_agent(r, "a1")
            if e["type"] == "tool_result" and e["tool"] == tool and not e["ok"]]


def _child_tools(fake, last: bool = False) -> list[str]:
    children = [b for b in fake.requests if CHILD in json.dumps(b["messages"][1:2])]
    child = children[-1 if last else 0]
    return [t["function"]["name"] for t in child["tools"]]


def test_disallowed_tools_are_checked_before_tools_and_never_offered(fake, workspace, agent_run):
    _profile(workspace, "quiet", "description: No commands.\ntools: \"*\"\ndisallowedTools: Bash, web_*, todo")
    # A scope where no sandbox is active: its commands could not be confined, so no bash either.
    _profile(workspace, "unconfined", "description: Edits src.\ndisallowedTools: todo\npaths:\n  write: [src/]")
    fake.add(reply(calls=[_task({"agent": "quiet"})]), reply("parent done"))
    fake.route(CHILD, reply(calls=[("bash", {"command": "echo hi > out.txt"})]), reply("could not"))
    r = agent_run("--policy", _policy(workspace, ALLOW), "--sandbox", "off", "task.md")
    assert r.code == 0, r.stderr
    tools = _child_tools(fake)
    assert "bash" not in tools and "todo" not in tools and not any(t.startswith("web_") for t in tools)
    assert "read" in tools and "write" in tools  # `*` in tools: the rest of the parent's
    assert [e["type"] for e in _errors(r, "bash")] == ["UnknownTool"] and not (workspace / "out.txt").exists()
    assert "unknown key" not in r.stderr
    # The record says what the child was allowed: an audit needs no profile file to tell it.
    [started] = [e for e in r.events if e["type"] == "subagent_started"]
    assert started["disallowed_tools"] == ["bash", "web_*", "todo"] and started["paths"] is None
    assert started["not_offered"]["bash"] == "named by disallowedTools" and "read" not in started["not_offered"]
    fake.add(reply(calls=[_task({"agent": "unconfined"})]), reply("parent done"))
    fake.route(CHILD, reply("nothing to do"))
    r = agent_run("--policy", _policy(workspace, ALLOW), "--sandbox", "off", "task.md")
    assert r.code == 0, r.stderr
    tools = _child_tools(fake, last=True)
    assert "bash" not in tools and "todo" not in tools and "write" in tools
    [started] = [e for e in r.events if e["type"] == "subagent_started"]
    assert started["paths"] == {"write": ["src"]} and started["disallowed_tools"] == ["todo"]
    assert started["not_offered"] == {"bash": "no sandbox is active to confine its commands to the paths scope",
                                      "todo": "named by disallowedTools"}


@pytest.mark.usefixtures("sandbox_available")
def test_a_write_scope_holds_for_the_file_tools_and_for_commands(fake, workspace, agent_run):
    for d in ("src", "docs"):
        (workspace / d).mkdir()
    (workspace / "docs" / "secret.txt").write_text("hidden\n", encoding="utf-8")
    _profile(workspace, "coder", "description: Edits src.\npaths:\n  read: [src/]\n  write: [src/]")
    fake.add(reply(calls=[_task({"agent": "coder"})]), reply("parent done"))
    fake.route(CHILD,
               reply(calls=[("write", {"path": "docs/x.md", "content": "by tool"}),
                            ("read", {"path": "docs/secret.txt"}),
                            ("write", {"path": "src/a.py", "content": "ok = 1\n"})]),
               reply(calls=[("bash", {"command": "echo by-bash > docs/y.md"})]),
               reply(calls=[("bash", {"command": "cat docs/secret.txt"})]),
               reply(calls=[("bash", {"command": "echo b = 2 > src/b.py"})]),
               reply("done what the scope allows"))
    r = agent_run("--policy", _policy(workspace, ALLOW), "task.md")
    assert r.code == 0, r.stderr
    assert r.summary["sandbox"]["active"] is True
    [write_refused] = _errors(r, "write")
    assert write_refused["type"] == "ToolNotAllowed" and write_refused["profile"] == "coder"
    assert "may write only src" in write_refused["message"]
    [read_refused] = _errors(r, "read")
    assert read_refused["type"] == "ToolNotAllowed" and "may read only src" in read_refused["message"]
    assert (workspace / "src" / "a.py").read_text() == "ok = 1\n"
    # Commands: the workspace is read-only but for src/, and hidden but for it.
    bash = [e for e in _of_agent(r, "a1") if e["type"] == "tool_result" and e["tool"] == "bash"]
    assert [e["ok"] for e in bash] == [False, False, True]
    assert "hidden" not in bash[1]["content"]
    assert not (workspace / "docs" / "x.md").exists() and not (workspace / "docs" / "y.md").exists()
    assert (workspace / "src" / "b.py").read_text() == "b = 2\n"
    assert r.summary["denials"] == []  # a scope narrows: its refusals are the child's errors, not the run's denials


def test_policy_explain_agent_shows_the_scope_and_a_glob_takes_bash(workspace):
    _profile(workspace, "docs", "description: Docs only.\ntools: read, write, bash\n"
             "disallowedTools: web_*\npaths:\n  write: [\"docs/**/*.md\"]")
    runner = CliRunner()
    done = runner.invoke(cli, ["policy", "explain", "--workspace", str(workspace), "--agent", "docs", "--json",
                               "edit", str(workspace / "src" / "a.py")])
    assert done.exit_code == 0, done.output
    data = json.loads(done.output)
    agent = data["agent"]
    assert agent["name"] == "docs" and agent["tools"] == ["read", "write"]
    assert agent["not_offered"]["bash"] == "the paths scope has a glob, which the sandbox cannot mount"
    assert agent["paths"] == {"write": ["docs/**/*.md"]}
    assert data["decision"] == "allow"  # the policy's: a scope narrows it for this child alone
    assert agent["decision"] == "deny" and "may write only docs/**/*.md" in agent["refused"]
    text = runner.invoke(cli, ["policy", "explain", "--workspace", str(workspace), "--agent", "docs",
                               "edit", str(workspace / "docs" / "a" / "b.md")])
    assert text.exit_code == 0, text.output
    assert "agent docs" in text.output and "not offered: bash (the paths scope has a glob" in text.output
    assert "decision for this agent: allow" in text.output
    missing = runner.invoke(cli, ["policy", "explain", "--workspace", str(workspace), "--agent", "nobody",
                                  "read", "x"])
    assert missing.exit_code == 2 and "no profile 'nobody'" in missing.output


def _secrets(workspace) -> None:
    """`secrets/key.txt`, outside every scope here, and `lib/` holding links to it: `flink` (the file), `link` (its
    directory)."""
    for d in ("secrets", "lib"):
        (workspace / d).mkdir()
    (workspace / "secrets" / "key.txt").write_text("TOPSECRET\n", encoding="utf-8")
    (workspace / "lib" / "a.py").write_text("a = 1\n", encoding="utf-8")
    os.symlink("../secrets/key.txt", workspace / "lib" / "flink")
    os.symlink("../secrets", workspace / "lib" / "link")


def _results(r) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for e in _of_agent(r, "a1"):
        if e["type"] == "tool_result":
            out.setdefault(e["tool"], []).append(e["content"])
    return out


def test_files_a_walk_meets_are_decided_by_the_scope_on_their_real_path(fake, workspace, agent_run):
    _secrets(workspace)
    (workspace / "src" / "sub").mkdir(parents=True)
    (workspace / "src" / "top.py").write_text("top = 1\n", encoding="utf-8")
    (workspace / "src" / "sub" / "deep.txt").write_text("DEEPSECRET\n", encoding="utf-8")
    # `src/*`: what is directly in src; `src/sub` matches, what is below it does not.
    _profile(workspace, "reader", "description: Reads.\npaths:\n  read: [\"src/*\", lib]")
    fake.add(reply(calls=[_task({"agent": "reader"})]), reply("parent done"))
    fake.route(CHILD, reply(calls=[("grep", {"pattern": "TOP|DEEP", "path": "src/sub"}),
                                   ("glob", {"pattern": "**", "path": "src/sub"}),
                                   ("grep", {"pattern": "TOP|DEEP", "path": "lib"}),
                                   ("glob", {"pattern": "**", "path": "lib"}),
                                   ("list", {"path": "lib"})]),
               reply("done"))
    r = agent_run("--policy", _policy(workspace, ALLOW), "--sandbox", "off", "task.md")
    assert r.code == 0, r.stderr
    got = _results(r)
    # Every walk started inside the scope; what it met outside it (below src/*, or through lib's links) is neither
    # searched nor shown, and the model is told files were skipped.
    assert not any(w in text for texts in got.values() for text in texts for w in ("SECRET", "deep.txt", "link"))
    assert "[1 file skipped: outside the files you may read]" in got["grep"][0]
    assert got["glob"][1].splitlines()[0] == "lib/a.py" and got["list"][0].splitlines()[0] == "a.py"
    assert "2 entries skipped: outside the files you may read" in got["list"][0]


@pytest.mark.usefixtures("sandbox_available")
def test_a_symlink_in_or_as_a_scope_entry_leads_nowhere_outside_it(fake, workspace, agent_run):
    _secrets(workspace)
    os.symlink("secrets", workspace / "out")  # an entry that is itself a link: a repository may commit one
    _profile(workspace, "coder", "description: Edits.\npaths:\n  read: [lib]\n  write: [out]")
    fake.add(reply(calls=[_task({"agent": "coder"})]), reply("parent done"))
    fake.route(CHILD,
               reply(calls=[("read", {"path": "lib/flink"}), ("read", {"path": "lib/link/key.txt"}),
                            ("edit", {"path": "lib/flink", "old_string": "TOP", "new_string": "X"}),
                            ("write", {"path": "lib/link/new.txt", "content": "planted"}),
                            ("write", {"path": "out/new.txt", "content": "planted"})]),
               # What a program opens itself, the policy cannot see: the mounts hold it.
               reply(calls=[("bash", {"command": "cat lib/flink lib/link/key.txt out/key.txt; ls; python3 -c "
                                                 "\"for p in ('out/p', 'lib/link/p'): open(p, 'w').write('x')\""})]),
               reply("done"))
    r = agent_run("--policy", _policy(workspace, ALLOW), "task.md")
    assert r.code == 0, r.stderr
    assert r.summary["sandbox"]["active"] is True
    assert [e["type"] for t in ("read", "edit", "write") for e in _errors(r, t)] == ["ToolNotAllowed"] * 5
    [bash] = _results(r)["bash"]
    assert "TOPSECRET" not in bash and "lib" in bash
    assert sorted(os.listdir(workspace / "secrets")) == ["key.txt"]
    assert (workspace / "secrets" / "key.txt").read_text() == "TOPSECRET\n"
