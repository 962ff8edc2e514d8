"""Which git commands write the repository (runner/policy/gitwrites.py): what `policy explain` notes will meet the
sandbox's read-only `.git`."""

from __future__ import annotations

import pytest

from runner.policy.gitwrites import WRITES, git_write

TABLE = [
    ("git add -A", "add"), ("git commit -m 'a b'", "commit"), ("git -C sub commit -q", "commit"),
    ("git -c user.name=x commit", "commit"), ("git --no-pager stash", "stash"), ("git stash pop", "stash"),
    ("git branch topic", "branch"), ("git branch -D topic", "branch"), ("git tag v1", "tag"),
    ("git config user.name x", "config"), ("git config --unset user.name", "config"), ("git fetch", "fetch"),
    ("git checkout -- f.py", "checkout"), ("git cherry-pick abc", "cherry-pick"),
    ("git status", None), ("git log --oneline", None), ("git diff", None), ("git push", None),
    ("git branch", None), ("git branch -a", None), ("git branch --contains HEAD", None), ("git tag -l 'v*'", None),
    ("git stash list", None), ("git stash show -p", None), ("git config user.name", None),
    ("git config --get user.name", None), ("git config --global user.name x", None), ("git config get x", None),
    ("gitk", None), ("echo git commit", None), ("git commit 'unterminated", None), ("", None),
]


@pytest.mark.parametrize(("command", "sub"), TABLE)
def test_git_write(command, sub):
    assert git_write(command) == sub


def test_every_subcommand_named_writes_in_its_plain_form():
    plain = {"config": "git config a.b c", "branch": "git branch x", "tag": "git tag x"}
    assert all(git_write(plain.get(sub, f"git {sub}")) == sub for sub in WRITES)
