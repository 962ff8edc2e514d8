"""The workspace's `.git` paths, listed again before every sandboxed process, without listing every directory.

`git_control` (runner/policy/gitdirs.py) reads every directory of the workspace: ~25 ms on 15k files, paid by
each sandboxed process (every `bash` call, every `rg` of `grep`). A run's walk keeps, per directory, its
subdirectories and `.git` entries with the directory's inode and ctime; the next walk lstats each directory
it reaches and reads again only those whose inode or ctime changed (~4 ms on those 15k files). A directory's
ctime changes whenever an entry is made, removed or renamed in it, and no process can set it back (unlike
mtime, which `touch -d` sets). Timestamps are coarse (a clock tick; 2 s on FAT), so a directory whose ctime
is that recent at its lstat is read again next time too, as git's index treats a "racily clean" file. What
each `.git` names (a `gitdir:` line, a `commondir`) is read again at every walk (runner/policy/gitdirs.py).
"""

from __future__ import annotations

import os
import stat
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from runner.policy.gitdirs import GIT, GitControl, control_of

RACY_NS = 3_000_000_000  # longer than any filesystem's timestamp granularity (FAT's 2 s)


@dataclass(frozen=True)
class _Dir:
    ino: int
    ctime_ns: int
    subdirs: tuple[str, ...]  # full paths, in listing order: not `.git`, not symlinks
    dotgits: tuple[str, ...]  # full paths
    racy: bool  # its ctime was too recent at the lstat to prove a later change would show


class GitWalk:
    def __init__(self, workspace: Path, now_ns: Callable[[], int] = time.time_ns) -> None:
        self.workspace = workspace
        self._now_ns = now_ns
        self._dirs: dict[str, _Dir] = {}
        self._lock = threading.Lock()  # commands may start from several threads (parallel subagents)
        self.listed = 0  # directories read by the last walk (the tests' way to see the cache work)
        self._racy_from = 0

    def control(self) -> GitControl:
        """What `git_control(workspace)` returns, from what changed since the last walk."""
        with self._lock:
            found: list[Path] = []
            seen: dict[str, _Dir] = {}
            self.listed = 0
            old, lstat = self._dirs, os.lstat
            # A ctime from before the walk began, less the coarsest granularity, shows any later change as newer.
            self._racy_from = self._now_ns() - RACY_NS
            stack = [str(self.workspace)]
            while stack:
                path = stack.pop()
                try:
                    st = lstat(path)  # before the listing: a change during it shows as a newer ctime next time
                except OSError:
                    continue
                entry = old.get(path)
                if entry is None or entry.racy or entry.ctime_ns != st.st_ctime_ns or entry.ino != st.st_ino:
                    entry = self._list(path, st)
                    if entry is None:
                        continue
                seen[path] = entry
                if entry.dotgits:
                    found.extend(Path(p) for p in entry.dotgits)
                stack.extend(entry.subdirs)
            self._dirs = seen  # what is gone is forgotten
            return control_of(found)

    def _list(self, path: str, st: os.stat_result) -> _Dir | None:
        if not stat.S_ISDIR(st.st_mode):
            return None  # replaced by a symlink since its parent was listed: never followed
        self.listed += 1
        subdirs: list[str] = []
        dotgits: list[str] = []
        try:
            with os.scandir(path) as it:
                for entry in it:
                    if entry.name == GIT:
                        dotgits.append(entry.path)
                    elif entry.is_dir(follow_symlinks=False):
                        subdirs.append(entry.path)
        except OSError:
            return None  # unreadable or gone, as in git_control: listed again next time
        racy = st.st_ctime_ns >= self._racy_from
        return _Dir(st.st_ino, st.st_ctime_ns, tuple(subdirs), tuple(dotgits), racy)
