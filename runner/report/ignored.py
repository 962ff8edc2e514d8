"""New files that ignore rules would hide: summary `ignored_new_files` and `ignored.patch`.

changes.patch is git's view, and git's view honours `.gitignore`: a `.gitignore` with `*` the agent wrote, or
the repository's own rule for `build/`, would hide a payload a later workflow step runs. So the files ignore
rules hide that are new since the start are recorded apart: listed (a wholly new directory as one `dir/`
entry, so `npm ci` is one line, not thousands, its files still counted) and their contents in `ignored.patch`,
each file up to MAX_FILE_BYTES and the whole up to MAX_PATCH_BYTES, in path order; what does not fit is named
at the top of the patch (text before the first `diff --git` is a comment to `git apply`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

LISTED = 50  # paths in the summary; `count` is every file
MAX_FILE_BYTES = 2 * 1024 * 1024  # as the change tracker's snapshot cap for one file
MAX_PATCH_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class IgnoredFiles:
    files: list[str]  # every new ignored file, workspace-relative
    entries: list[str]  # the same, a wholly new directory as one `dir/`
    patch: str  # "" when nothing

    def summary(self) -> dict[str, Any]:
        return {"count": len(self.files), "paths": self.entries[:LISTED]}


def ignored_new(new: list[str], present: list[str], git: Any, workspace: Path) -> IgnoredFiles:
    """`new`: the ignored files at the end that were not at the start; `present`: every other file the work
    tree had at the start or has at the end (tracked, untracked, ignored at the start). `git`: a SafeGit."""
    return IgnoredFiles(new, collapse(new, present), _patch(new, git, workspace) if new else "")


def collapse(new: list[str], present: list[str]) -> list[str]:
    """Each new file under the topmost directory that holds nothing but new ignored files is that `dir/`."""
    occupied: set[str] = set()
    for path in present:
        parts = path.rstrip("/").split("/")
        occupied.update("/".join(parts[:i]) for i in range(1, len(parts)))
        if path.endswith("/"):  # a nested repository listed as a directory: it is there
            occupied.add(path.rstrip("/"))
    entries: set[str] = set()
    for path in new:
        parts = path.rstrip("/").split("/")
        top = next((i for i in range(1, len(parts)) if "/".join(parts[:i]) not in occupied), None)
        entries.add(path if top is None else "/".join(parts[:top]) + "/")
    return sorted(entries)


def _patch(new: list[str], git: Any, workspace: Path) -> str:
    """One `git add -N` into an empty index of the runner's own, then one `git diff` of the work tree against
    it: every chosen file as a new-file diff (binary ones in git's binary form), in two git processes whatever
    the number of files."""
    chosen, left_out, total = [], [], 0
    for rel in new:
        try:
            size = os.lstat(workspace / rel).st_size
        except OSError:
            continue
        if rel.endswith("/") or size > MAX_FILE_BYTES or total + size > MAX_PATCH_BYTES:
            left_out.append(rel)
            continue
        chosen.append(rel)
        total += size
    body = ""
    if chosen:
        index, listing = git.private / "ignored-index", git.private / "ignored-paths"
        listing.write_bytes(b"".join(p.encode("utf-8", "surrogateescape") + b"\0" for p in chosen))
        env = {"GIT_INDEX_FILE": str(index), "GIT_LITERAL_PATHSPECS": "1"}
        added = git("add", "-N", "-f", f"--pathspec-from-file={listing}", "--pathspec-file-nul", env=env)
        if added.returncode == 0:
            body = git("diff", "--binary", "--no-ext-diff", "--no-textconv", "--no-color", env=env).stdout
        else:
            left_out, body = new, ""
        index.unlink(missing_ok=True)
    if left_out:
        head = (f"ignored.patch leaves out {len(left_out)} file(s) (over {MAX_FILE_BYTES} bytes each, past "
                f"{MAX_PATCH_BYTES} bytes in all, or not readable by git):\n")
        body = head + "".join(f"  {p}\n" for p in left_out[:LISTED]) + "\n" + body
    return body
