"""What in a workspace git reads as its own: the one definition both layers use (issue 25).

Git runs what its control files say (`core.fsmonitor`, hooks, `commondir`, alternates, attributes
drivers), and the workflow's next ordinary step — `git status` to commit the agent's work — runs it with
the job's token. So no agent may write any of them: the in-process file tools hard-deny these paths
(`is_git_control`, decided at each call, so a `.git` made during the run counts) and the sandbox mounts
the existing ones read-only (`git_control(workspace).paths`, listed again before each sandboxed call).

Off limits:

- every path with a component exactly `.git` (file or directory, existing or not, at any depth): the
  repository's own, a nested repository's, a worktree's or submodule's `.git` file;
- every gitdir a `.git` file (`gitdir: …`) or a `.git` symlink names, and the `commondir` such a gitdir
  (or a `.git` directory) names: a worktree's or separately stored repository's real control files.

`.gitignore`, `.gitattributes`, `.gitmodules`, `.github/**` and a submodule's working files are ordinary
files: only an exact `.git` component counts.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

GIT = ".git"
_CAP = 4096  # a `.git` file or `commondir` is one line; anything longer is not git's


@dataclass(frozen=True)
class GitControl:
    entries: tuple[Path, ...]  # each `.git` in the workspace that is not a symlink (dir or file)
    gitdirs: tuple[Path, ...]  # real paths the `.git` files, symlinks and `commondir` files name

    @property
    def paths(self) -> tuple[Path, ...]:
        return (*self.entries, *self.gitdirs)


def has_git_component(workspace: Path, path: Path, *, fold: bool = False) -> bool:
    """A component exactly `.git` (any case where the filesystem ignores it), counted below the
    workspace for a path inside it (a workspace under some `.git` directory is still the workspace)."""
    parts = path.relative_to(workspace).parts if path.is_relative_to(workspace) else path.parts
    return any((p.casefold() if fold else p) == GIT for p in parts)


def is_git_control(workspace: Path, path: Path, *, fold: bool = False) -> bool:
    """Whether `path` (resolved) is, or is inside, something git reads as its own. Walks the workspace
    for `.git` files when the path has no `.git` component itself: evaluated at each call."""
    if has_git_component(workspace, path, fold=fold):
        return True
    return any(_inside(path, d, fold) for d in git_control(workspace, fold=fold).gitdirs)


def git_control(workspace: Path, *, fold: bool = False) -> GitControl:
    """Every `.git` in the workspace (not descending into one, nor following a symlinked directory)
    and the gitdirs and commondirs they name."""
    found: list[Path] = []
    stack = [str(workspace)]
    while stack:
        try:
            it = os.scandir(stack.pop())
        except OSError:
            continue  # unreadable or gone: nothing in it can be listed, and the walk must not fail a call
        with it:
            for entry in it:
                if (entry.name.casefold() if fold else entry.name) == GIT:
                    found.append(Path(entry.path))
                elif entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
    return control_of(found)


def control_of(found: list[Path]) -> GitControl:
    """What the `.git` entries found in a walk (in walk order) make off limits: each one, and what each names
    (read now). runner/sandbox/gitwalk.py walks incrementally and resolves here, one definition for both."""
    entries: list[Path] = []
    named: list[Path] = []
    for dotgit in found:
        _named_by(dotgit, entries, named)
    gitdirs = [d for d in dict.fromkeys(named) if not any(_inside(d, e, False) for e in entries)]
    return GitControl(tuple(sorted(entries)), tuple(gitdirs))


def _named_by(dotgit: Path, entries: list[Path], named: list[Path]) -> None:
    """`dotgit` listed, and what it names: a symlink's target, a file's `gitdir:`, a gitdir's commondir."""
    try:
        st = os.lstat(dotgit)
    except OSError:
        return
    if stat.S_ISLNK(st.st_mode):
        gitdir: Path | None = Path(os.path.realpath(dotgit))  # git follows it; the link itself is content
    elif stat.S_ISREG(st.st_mode):
        entries.append(dotgit)
        text = _small_text(dotgit)
        gitdir = None
        if text is not None and text.startswith("gitdir:"):
            gitdir = Path(os.path.realpath(dotgit.parent / text[len("gitdir:"):].strip()))
    elif stat.S_ISDIR(st.st_mode):
        entries.append(dotgit)
        gitdir = dotgit
    else:
        return  # a FIFO or device named `.git`: git cannot use it, and reading it could hang
    if gitdir is None:
        return
    if gitdir != dotgit:
        named.append(gitdir)
    common = _small_text(gitdir / "commondir")
    if common:
        named.append(Path(os.path.realpath(gitdir / common.strip())))


def _small_text(path: Path) -> str | None:
    """A regular file's first line-sized text, never following a symlink or waiting on a FIFO."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.read(fd, _CAP).decode("utf-8", "replace").split("\n", 1)[0]
    except OSError:
        return None
    finally:
        os.close(fd)


def _inside(path: Path, base: Path, fold: bool) -> bool:
    if fold:
        path, base = Path(str(path).casefold()), Path(str(base).casefold())
    return path == base or path.is_relative_to(base)
