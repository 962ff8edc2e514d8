"""Credentials git stores are secrets for every reader (issue 25, item 1): the token `actions/checkout`
persists in `.git/config` reaches neither the model nor the run's records, in any form."""

from __future__ import annotations

import base64
import subprocess
from pathlib import Path

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
    assert GHS not in creds and "[no matches]" in creds_grep
    assert (workspace / ".git" / "config").read_bytes() == before, "sanitizing never writes into the workspace"
