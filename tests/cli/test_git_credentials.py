"""Credentials git stores are secrets for every reader (issue 25, item 1): the token `actions/checkout`
persists in `.git/config` reaches neither the model nor the run's records, in any form."""

from __future__ import annotations

import base64
import subprocess
from pathlib import Path

import pytest

from tests.fakes.openai_server import reply

GHS = "ghs_" + "Q9x" * 12  # the job token's shape
HEADER = base64.b64encode(f"x-access-token:{GHS}".encode()).decode()


def checkout(ws: Path) -> None:
    """The workspace as `actions/checkout` with persist-credentials (its default) leaves it."""
    subprocess.run(["git", "init", "-q", "-b", "main", str(ws)], check=True)
    for key, value in (("remote.origin.url", "https://github.com/octo/repo"),
                       ("http.https://github.com/.extraheader", f"AUTHORIZATION: basic {HEADER}")):
        subprocess.run(["git", "-C", str(ws), "config", "--local", key, value], check=True)


def leaks(text: str) -> list[str]:
    return [s[:12] for s in (GHS, HEADER) if s in text]


def test_the_checkout_header_read_by_the_agent_is_masked_in_every_record(fake, workspace, agent_run):
    checkout(workspace)
    fake.add(reply(calls=[("read", {"path": ".git/config"})]), reply(f"the header is basic {HEADER}"))
    r = agent_run("--sandbox", "off", "task.md")
    assert r.code == 0, r.stderr
    for path in (p for p in r.run_dir.rglob("*") if p.is_file()):
        assert leaks(path.read_text(encoding="utf-8", errors="replace")) == [], path
    assert leaks(r.stdout) == [] and leaks(r.stderr) == []
    assert "[REDACTED:github-token]" in r.summary["answer"]


def _tool_messages(fake) -> list[str]:
    return [m["content"] for m in fake.requests[-1]["messages"] if m["role"] == "tool"]


def test_the_file_tools_show_a_repository_config_without_its_credentials(fake, workspace, agent_run):
    checkout(workspace)
    nested = workspace / "vendor" / "lib"
    nested.mkdir(parents=True)
    checkout(nested)
    subprocess.run(["git", "-C", str(workspace), "config", "--local", "includeIf.gitdir:/x/.path",
                    "/home/runner/work/_temp/git-credentials-1.config"], check=True)
    (workspace / "sub").mkdir()
    (workspace / "sub" / ".git-credentials").write_text(f"https://x-access-token:{GHS}@github.com\n")
    before = (workspace / ".git" / "config").read_bytes()
    fake.add(reply(calls=[("read", {"path": ".git/config"}),
                          ("grep", {"pattern": "basic|url|path", "path": ".git/config"}),
                          ("read", {"path": "vendor/lib/.git/config"}), ("read", {"path": "sub/.git-credentials"}),
                          ("grep", {"pattern": "github", "path": "sub/.git-credentials"})]),
             reply("done"))
    # The shipped policy asks before a `.git-credentials` is read: approved, it is still shown empty.
    r = agent_run("--sandbox", "off", "--approve", "read:workspace:sub/.git-credentials", "task.md")
    assert r.code == 0, r.stderr
    read, grep, nested_read, creds, creds_grep = _tool_messages(fake)
    for seen in (read, grep, nested_read, creds, creds_grep):
        assert leaks(seen) == [] and "includeIf" not in seen and "_temp" not in seen, seen
    assert 'remote "origin"' in read and "url = https://github.com/octo/repo" in read and "agent-run" in read
    assert "url = https://github.com/octo/repo" in grep and "basic" not in grep
    assert "extraheader" not in nested_read.lower() and 'remote "origin"' in nested_read
    assert GHS not in creds and "[no matches for `github` in 1 file under `sub/.git-credentials`]" in creds_grep
    assert (workspace / ".git" / "config").read_bytes() == before, "sanitizing never writes into the workspace"


@pytest.mark.usefixtures("sandbox_available")
def test_a_sandboxed_command_sees_the_config_sanitized_and_no_stored_credential(fake, workspace, agent_run, tmp_path):
    checkout(workspace)
    git = ["git", "-C", str(workspace), "-c", "user.name=t", "-c", "user.email=t@e"]
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "first"], check=True)
    nested = workspace / "vendor" / "lib"
    nested.mkdir(parents=True)
    checkout(nested)
    (workspace / "sub").mkdir()
    (workspace / "sub" / ".git-credentials").write_text(f"https://x-access-token:{GHS}@github.com\n")
    cargo = tmp_path / "cargo"  # a toolchain outside $HOME, mounted read-only: its credentials are not
    (cargo / "bin").mkdir(parents=True)
    (cargo / "credentials.toml").write_text(f'[registry]\ntoken = "{GHS}"\n')
    before = (workspace / ".git" / "config").read_bytes()
    command = ("cat .git/config; echo ==; cat vendor/lib/.git/config; echo ==; git log --format=%s; git status "
               f"--short --untracked-files=no; echo ==; cat sub/.git-credentials; cat {cargo}/credentials.toml; "
               f"ls {cargo}; base64 -w0 .git/config")
    (workspace / "look.sh").write_text(command + "\n")  # one command to approve
    fake.add(reply(calls=[("bash", {"command": "bash look.sh"})]), reply("done"))
    r = agent_run("--sandbox", "required", "--approve", "bash:shell:bash look.sh", "task.md",
                  env={"CARGO_HOME": str(cargo)})
    assert r.code == 0, r.stderr
    (seen,) = _tool_messages(fake)
    assert leaks(seen) == [] and "extraheader" not in seen.lower(), seen
    config, nested_config, git_says, _rest = seen.split("==\n", 3)
    assert 'remote "origin"' in config and "agent-run" in config
    assert 'remote "origin"' in nested_config and "agent-run" in nested_config
    assert git_says.strip() == "first", "git works on the sanitized config for local operations"
    assert "bin" in _rest, "the toolchain itself stays visible"
    assert (workspace / ".git" / "config").read_bytes() == before, "sanitizing never writes into the workspace"
