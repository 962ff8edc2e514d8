"""runner/workspace/gitconfig.py: a repository's config as the agent sees it, without credentials (issue 25)."""

from __future__ import annotations

import subprocess
from pathlib import Path, PurePath

import pytest

from runner.workspace.gitconfig import NOTE, is_git_config, sanitize, seen_as

TOKEN = "ghs_" + "Q9x" * 12
BASE = "[core]\n\trepositoryformatversion = 0\n\tbare = false\n"


@pytest.mark.parametrize(("given", "seen"), [
    # actions/checkout, persist-credentials (its default)
    (BASE + '[http "https://github.com/"]\n\textraheader = AUTHORIZATION: basic eC1hY2Nlc3M=\n',
     BASE + '[http "https://github.com/"]\n' + NOTE + "\n"),
    # newer checkout releases: the header in a file under $RUNNER_TEMP, pulled in by includeIf
    (BASE + '[includeIf "gitdir:/home/runner/work/r/r/.git"]\n'
     '\tpath = /home/runner/work/_temp/git-credentials.config\n' + '[remote "origin"]\n\turl = https://github.com/o/r\n',
     BASE + NOTE + '\n[remote "origin"]\n\turl = https://github.com/o/r\n'),
    (BASE + "[include]\n\tpath = ../secrets.inc\n", BASE + NOTE + "\n"),
    (BASE + '[remote "origin"]\n\turl = https://x-access-token:' + TOKEN + '@github.com/o/r\n'
     '\tfetch = +refs/*:refs/*\n',
     BASE + '[remote "origin"]\n' + NOTE + "\n\tfetch = +refs/*:refs/*\n"),
    (BASE + '[url "https://' + TOKEN + '@github.com/"]\n\tinsteadOf = https://github.com/\n', BASE + NOTE + "\n"),
    (BASE + '[url "https://github.com/"]\n\tinsteadOf = https://u:p@example.com/\n',
     BASE + '[url "https://github.com/"]\n' + NOTE + "\n"),
    (BASE + "[credential]\n\thelper = \"!f() { echo password=" + TOKEN + "; }; f\"\n\tusername = bot\n",
     BASE + NOTE + "\n"),
    (BASE + '[credential "https://u:p@host"]\n\thelper = store\n', BASE + NOTE + "\n"),
    # spellings git accepts: any case, a key on the header's line, the old `[section.sub]` form, continuations
    (BASE + "[HTTP]\n\tExtraHeader = Authorization: bearer x \\\n  continued\n\tsslVerify = true\n",
     BASE + "[HTTP]\n" + NOTE + "\n\tsslVerify = true\n"),
    (BASE + "[http] extraheader = AUTHORIZATION: basic abc\n", BASE + "[http]\n" + NOTE + "\n"),
    (BASE + "[http.https://github.com/]\n\textraheader = x\n", BASE + "[http.https://github.com/]\n" + NOTE + "\n"),
    (BASE + "[includeIf.gitdir:/x/.path]\n\tpath = /t/c\n", BASE + NOTE + "\n"),
    # what holds no credential stays as written
    (BASE + '[remote "origin"]\n\turl = git@github.com:o/r.git\n[branch "main"]\n\tremote = origin\n'
     '[http]\n\tpostBuffer = 524288000\n# a comment\n',
     BASE + '[remote "origin"]\n\turl = git@github.com:o/r.git\n[branch "main"]\n\tremote = origin\n'
     '[http]\n\tpostBuffer = 524288000\n# a comment\n'),
])
def test_credential_bearing_lines_are_removed(given, seen):
    assert sanitize(given) == seen
    assert sanitize(seen) == seen, "idempotent"


@pytest.mark.parametrize(("path", "config"), [
    (".git/config", True), (".git/config.worktree", True), (".git/worktrees/w/config.worktree", True),
    (".git/modules/sub/config", True), ("sub/.git/config", True), ("/abs/ws/.GIT/CONFIG", True),
    ("config", False), ("src/config", False), (".git/configs", False), (".github/config", False),
    ("sub/.gitconfig", False), (".git/hooks/pre-commit", False),
])
def test_which_files_are_repository_configs(path, config):
    assert is_git_config(PurePath(path)) is config


def test_what_the_file_tools_see():
    raw = b"[http]\n\textraheader = AUTHORIZATION: basic abc\n"
    assert seen_as(PurePath("a/.git/config"), raw) == b"[http]\n" + NOTE.encode() + b"\n"
    assert seen_as(PurePath("a/.git-credentials"), b"https://u:" + TOKEN.encode() + b"@github.com\n") == b""
    assert seen_as(PurePath("a/config"), raw) == raw


def test_git_still_reads_the_sanitized_config(tmp_path: Path):
    """What the sandbox mounts must be a config git accepts, with the local settings kept."""
    ws = tmp_path / "r"
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    config = ws / ".git" / "config"
    with config.open("a") as f:
        f.write('[http "https://github.com/"]\n\textraheader = AUTHORIZATION: basic abc \\\n  more\n'
                '[includeIf "gitdir:/nowhere/"]\n\tpath = /nowhere/x.config\n[user]\n\tname = Kept Name\n')
    config.write_text(sanitize(config.read_text()))
    done = subprocess.run(["git", "-C", str(ws), "config", "--list", "--local"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "user.name=Kept Name" in done.stdout and "extraheader" not in done.stdout and "include" not in done.stdout
