"""The sandbox's half of "credentials git stores are secrets" (runner/workspace/gitconfig.py has the rule):
each repository config in the workspace is seen through a sanitized copy bound read-only over it, and
each `.git-credentials` file is bound over with an empty one.

Found once, when the sandbox opens: what `actions/checkout` persisted is there before the run starts
(a repository the agent creates later holds no credential it did not have). The copies live in the
runner's private directory, never in the workspace (sanitizing must not write into it) and never
visible inside. A symlink is never a mount source or target here (bwrap would follow it).
"""

from __future__ import annotations

import os
from pathlib import Path

from runner.sandbox.layout import Mount
from runner.workspace.gitconfig import CREDENTIAL_FILE, is_git_config, sanitize

# Inside a `.git`, the configs are at its top, in `worktrees/*` and in `modules/**`: the rest is not walked.
_GIT_SKIP = frozenset({"objects", "refs", "logs", "hooks", "info", "lfs", "rr-cache", "branches"})
_WALK_SKIP = frozenset({".agent-run"})  # the runner's own records
MAX_ENTRIES = 500_000  # a bound on the walk of a huge tree (each entry is one scandir item, ~1 µs)


def credential_mounts(workspace: Path, private: Path) -> tuple[Mount, ...]:
    """Mounts that hide the workspace's stored git credentials: for each repository config a sanitized copy
    (written under `private`) bound read-only over it, for each `.git-credentials` an empty file."""
    configs, credentials = _find(workspace)
    mounts: list[Mount] = []
    copies = private / "gitconfig"
    for i, config in enumerate(configs):
        try:
            text = config.read_bytes().decode("utf-8", errors="surrogateescape")
        except OSError:
            continue
        copies.mkdir(mode=0o700, exist_ok=True)
        copy = copies / f"{i}-{config.name}"
        copy.write_bytes(sanitize(text).encode("utf-8", errors="surrogateescape"))
        copy.chmod(0o444)
        mounts.append(Mount("ro", str(config), str(copy)))
    mounts += [Mount("mask-file", str(path)) for path in credentials]
    return tuple(mounts)


def _find(workspace: Path) -> tuple[list[Path], list[Path]]:
    """(repository configs, `.git-credentials` files) below `workspace`, regular files only, in walk order."""
    configs: list[Path] = []
    credentials: list[Path] = []
    stack: list[tuple[str, bool]] = [(str(workspace), False)]  # (directory, inside a .git)
    seen = 0
    while stack and seen < MAX_ENTRIES:
        top, in_git = stack.pop()
        try:
            entries = list(os.scandir(top))
        except OSError:
            continue
        seen += len(entries)
        for entry in entries:
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
                is_file = not is_dir and entry.is_file(follow_symlinks=False)
            except OSError:
                continue
            if is_dir:
                if entry.name in _WALK_SKIP or (in_git and entry.name in _GIT_SKIP):
                    continue
                stack.append((entry.path, in_git or entry.name.casefold() == ".git"))
            elif is_file and in_git and is_git_config(Path(entry.path)):
                configs.append(Path(entry.path))
            elif is_file and not in_git and entry.name.casefold() == CREDENTIAL_FILE:
                credentials.append(Path(entry.path))
    return configs, credentials
