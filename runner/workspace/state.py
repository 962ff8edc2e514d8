"""The state a run left its workspace in, and whether a workspace is in it now.

At the end of a run, `workspace.json` (sealed) lists every file the run changed with the sha256 of
its content then (null: deleted). A resume or fork goes on from the run's conversation, in which the
model remembers those files as it left them; a workspace that differs (a fresh checkout, someone's
edits) would make the model act on a world that is not there. So the resume checks, refuses with the
differences, and — with `--apply-changes` — first applies the run's `changes.patch` (how a CI
artifact is continued on a laptop: check out the run's base, unpack the artifact, resume).
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from runner.record.mask import MARKER
from runner.workspace.git import GitError, isolated_env, run_git
from runner.workspace.repofile import read_capped

SHOWN = 5  # differences named in a refusal; the rest are counted


class WorkspaceMismatch(Exception):
    pass


def end_state(workspace: Path, changed: list[str], base: str | None) -> dict[str, Any]:
    return {"base": base, "files": {name: _sha256(workspace / name) for name in sorted(changed)}}


def _sha256(path: Path) -> str | None:
    """Of a file's content, or of a symlink's target (as text: never followed — a link to /dev/zero or a FIFO
    the agent left must not hang the run's end); None when there is no file."""
    try:
        st = path.lstat()
    except (FileNotFoundError, NotADirectoryError):
        return None
    if stat.S_ISLNK(st.st_mode):
        return hashlib.sha256(b"symlink:" + os.fsencode(os.readlink(path))).hexdigest()
    if stat.S_ISDIR(st.st_mode):
        return None
    if not stat.S_ISREG(st.st_mode):
        return hashlib.sha256(f"special:{stat.S_IFMT(st.st_mode)}".encode()).hexdigest()
    try:
        return read_capped(path, 0)[2]
    except OSError:
        return None


def read_state(run_dir: Path) -> dict[str, Any] | None:
    try:
        return json.loads((run_dir / "workspace.json").read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None


def differences(workspace: Path, state: dict[str, Any]) -> list[str]:
    out = []
    for name, want in sorted((state.get("files") or {}).items()):
        if Path(name).is_absolute() or ".." in Path(name).parts:
            out.append(f"{name} (not a path in the workspace)")  # the state is read from a run directory
            continue
        have = _sha256(workspace / name)
        if have == want:
            continue
        if want is None:
            out.append(f"{name} (the run deleted it; it exists)")
        elif have is None:
            out.append(f"{name} (missing)")
        else:
            out.append(f"{name} (differs)")
    return out


def check(workspace: Path, run_dir: Path, *, apply: bool = False, force: bool = False,
          earlier: Sequence[Path] = ()) -> str | None:
    """None when the workspace is as the run left it; a warning when that cannot be told (the run left
    no state: killed before its summary); raises WorkspaceMismatch otherwise. With `apply`, a workspace
    that differs gets the run's changes.patch first; `force` goes on whatever differs (still applying).
    `earlier`: the runs it continued, newest first — what they changed and it did not is checked too, as they
    left it (its conversation remembers their edits as well)."""
    state = read_state(run_dir)
    if state is not None and earlier:
        files: dict[str, Any] = {}
        for older in reversed(earlier):  # the oldest first: a later run's state of a file wins
            files.update((read_state(older) or {}).get("files") or {})
        state = {**state, "files": {**files, **(state.get("files") or {})}}
    if state is None:
        return (f"{run_dir.name} was killed before recording the state it left the workspace in: the workspace is "
                "not checked")
    diffs = differences(workspace, state)
    if diffs and apply:
        apply_patch(workspace, run_dir)
        diffs = differences(workspace, state)
        if diffs and not force:
            raise WorkspaceMismatch(_listing(diffs) + " after applying changes.patch" + _masked_note(run_dir))
    elif diffs and not force:
        raise WorkspaceMismatch(
            f"the workspace is not in the state {run_dir.name} left it in: {_listing(diffs)}; resume in the workspace "
            "the run left, add --apply-changes to apply the run's changes.patch to a fresh checkout of its base "
            f"({(state.get('base') or 'the files as they were')[:12]}), or --force to go on anyway")
    return None


def _listing(diffs: list[str]) -> str:
    more = f" and {len(diffs) - SHOWN} more" if len(diffs) > SHOWN else ""
    return ", ".join(diffs[:SHOWN]) + more


def _masked_note(run_dir: Path) -> str:
    try:
        masked = MARKER in (run_dir / "changes.patch").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return " (the patch holds a masked secret, so it cannot reproduce those files exactly)" if masked else ""


def apply_patch(workspace: Path, run_dir: Path) -> None:
    """`git apply` of the run's changes.patch onto the workspace, with a throwaway repository's empty config
    (whatever the workspace's own `.git/config` names — filters, hooks — is not read) and git's own refusal
    of paths outside the tree."""
    patch = run_dir / "changes.patch"
    if not patch.is_file():
        raise WorkspaceMismatch(f"{run_dir.name} has no changes.patch to apply")
    with tempfile.TemporaryDirectory(prefix="agent-run-apply-") as tmp:
        env = isolated_env(tmp)
        try:
            run_git("init", "-q", "--bare", f"{tmp}/repo", env=env, cwd=Path(tmp), timeout=60)
            env.update(GIT_DIR=f"{tmp}/repo", GIT_WORK_TREE=str(workspace))
            run_git("apply", "--binary", "--whitespace=nowarn", str(patch.resolve()), env=env, cwd=workspace)
        except GitError as exc:
            if exc.returncode is None:  # no git, or one that hangs: a refusal, not a crash
                raise WorkspaceMismatch(f"cannot apply {run_dir.name}/changes.patch: {exc}") from None
            raise WorkspaceMismatch(f"cannot apply {run_dir.name}/changes.patch to {workspace}: {exc.stderr[-400:]} "
                                    "(is this a fresh checkout of the run's base?)") from None
