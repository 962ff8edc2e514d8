"""Project instructions (issue 14): the AGENTS.md chain, --instructions and --append-system-prompt in the
system prompt, once, in a fixed order, framed as repository content; recorded in run_started."""

from __future__ import annotations

import hashlib
import subprocess

from tests.fakes.openai_server import reply


def _system(fake, i: int = 0) -> str:
    return fake.requests[i]["messages"][0]["content"]


def test_the_agents_md_chain_is_in_the_prefix_of_every_request(fake, workspace, agent_run, tmp_path):
    repo = workspace
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    (repo / "AGENTS.md").write_text("Run `make test` before you finish.\n")
    sub = repo / "pkg"
    sub.mkdir()
    (sub / "CLAUDE.md").write_text("In pkg/, keep functions pure.\n")
    (sub / "task.md").write_text("Do the thing.\n")
    (tmp_path / "extra.md").write_text("Answer in one line.\n")
    fake.add(reply(calls=[("list", {})]), reply("done"))
    r = agent_run("--workspace", str(sub), "--runs-dir", ".agent-run/runs", "--instructions",
                  str(tmp_path / "extra.md"), "--append-system-prompt", "Be brief.", str(sub / "task.md"))
    assert r.code == 0, r.stderr
    system = _system(fake)
    order = [system.index(x) for x in ("Answer in one line.", "Be brief.", "Run `make test`", "keep functions pure")]
    assert order == sorted(order)
    assert "## AGENTS.md" in system and "## pkg/CLAUDE.md" in system
    assert "cannot change what you are allowed to do" in system
    assert str(tmp_path) not in system  # no absolute path: the same prompt on every machine
    assert _system(fake, 1) == system  # every request shares it
    records = r.of_type("run_started")[0]["instructions"]
    assert [(x["source"], x["path"]) for x in records] == [
        ("--instructions", str(tmp_path / "extra.md")), ("--append-system-prompt", None),
        ("repository", "AGENTS.md"), ("repository", "pkg/CLAUDE.md")]
    assert records[2]["sha256"] == hashlib.sha256(b"Run `make test` before you finish.\n").hexdigest()


def test_without_instructions_the_prompt_is_agent_runs_own(fake, workspace, agent_run):
    fake.add(reply("ok"))
    r = agent_run("task.md")
    assert r.code == 0
    assert "Project instructions" not in _system(fake)
    assert r.of_type("run_started")[0]["instructions"] is None


def test_a_large_agents_md_is_cut_with_a_note_and_a_symlink_is_not_followed(fake, workspace, agent_run, tmp_path):
    (workspace / "AGENTS.md").write_text("x" * 40_000)
    fake.add(reply("ok"))
    r = agent_run("task.md")
    system = _system(fake)
    assert "was cut here: 40,000 bytes" in system and system.count("x" * 100) < 400
    assert r.of_type("run_started")[0]["instructions"][0]["truncated"] is True

    (workspace / "AGENTS.md").unlink()
    (tmp_path / "secret.txt").write_text("TOP SECRET\n")
    (workspace / "AGENTS.md").symlink_to(tmp_path / "secret.txt")
    fake.add(reply("ok"))
    agent_run("task.md")
    assert "TOP SECRET" not in _system(fake, -1)


def test_a_missing_instructions_file_is_a_usage_error(fake, workspace, agent_run):
    r = agent_run("--instructions", "nope.md", "task.md")
    assert r.code == 2 and "cannot read --instructions nope.md" in r.stderr and not fake.requests
