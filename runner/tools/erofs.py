"""A command's output read for a write refused by a read-only file system (EROFS): what the sandbox does to a
write to `.git` (runner/sandbox/gitmounts.py), a system directory or anything else it shows read-only.

Pure over the text: which lines say so, and the path each names, in the forms the tools print —
    fatal: Unable to create '/ws/.git/index.lock': Read-only file system        (git)
    error: could not lock config file .git/config: Read-only file system        (git)
    touch: cannot touch '.git/x': Read-only file system                         (coreutils; ‘…’ in some locales)
    bash: line 1: .git/x: Read-only file system                                 (a redirection)
    OSError: [Errno 30] Read-only file system: '.git/x'                         (Python)
    error: insufficient permission for adding an object to repository database .git/objects   (git, no errno text)
Whether a path named is on a mount the sandbox made read-only is the sandbox's to say (`Sandbox.read_only`);
`blocked` adds what that means to a failed command's error: a note for the model, a `sandbox_blocked` warning for
the workflow's author. The exit code and the rest of the result stay as they were.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from runner.tools.base import ToolContext, ToolError

EROFS = "Read-only file system"
_QUOTED = re.compile(r"'([^']+)'|‘([^’]+)’|\"([^\"]+)\"|`([^`]+)`")
# git's own wording for a `.git` it cannot write, where the errno's text is not printed.
_GIT_FORMS = (re.compile(r"(?i)unable to (?:create|write|lock)[^'\n]*'([^'\n]*\.git(?:/[^'\n]*)?)'"),
              re.compile(r"(?i)insufficient permission for adding an object to repository database (\S+)"))


def refused_writes(output: str) -> list[str] | None:
    """The paths the output names as refused by a read-only file system, in the order printed (a path once);
    [] when it says so without naming one; None when it does not say so at all."""
    said, paths = False, []
    for line in output.splitlines():
        path: str | None
        if EROFS in line or "[Errno 30]" in line:
            said, path = True, _named(line)
        else:
            found = next((m for m in (f.search(line) for f in _GIT_FORMS) if m is not None), None)
            if found is None:
                continue
            said, path = True, found.group(1)
        if path and path not in paths:
            paths.append(path)
    return paths if said else None


def _named(line: str) -> str | None:
    """The path an EROFS line names: the last quoted one before the message (git, coreutils), else the one after
    it (Python), else the word right before it (bash, git's config lock)."""
    before, _, after = line.partition(EROFS) if EROFS in line else line.partition("[Errno 30]")
    quoted = [next(g for g in m.groups() if g is not None) for m in _QUOTED.finditer(before)]
    if quoted:
        return quoted[-1]
    quoted = [next(g for g in m.groups() if g is not None) for m in _QUOTED.finditer(after)]
    if quoted:
        return quoted[0]
    words = before.rstrip().removesuffix(":").split()
    word = words[-1] if words else ""
    return word if "/" in word or word.startswith(".") else None


def blocked(err: ToolError, output: str, ctx: ToolContext) -> ToolError:
    """`err` (a command's non-zero exit, `output` its output as shown) with, when the sandbox refused one of its
    writes, a `sandbox` note for the model and a `sandbox_blocked` warning naming the call and the path the output
    names, else the mount: the first path named on a mount the sandbox made read-only; when none is named, the
    workspace's `.git`, if that is one. A path named on a writable mount was not the sandbox's doing: unchanged."""
    sandbox = ctx.sandbox
    named = refused_writes(output) if sandbox is not None and sandbox.active else None
    if sandbox is None or named is None:
        return err
    hits = ((p, sandbox.read_only(Path(os.path.normpath(ctx.workspace / p)))) for p in named)
    path, mount = next(((p, m) for p, m in hits if m is not None), (None, None))
    if mount is None and named:
        return err
    if mount is None:
        mount = sandbox.read_only(ctx.workspace / ".git")
        if mount is None:
            return err
    where = _shown(mount, ctx.workspace)
    what = f"{_shown(path, ctx.workspace)} is on a read-only mount of the sandbox ({where})" if path else \
        f"a write was refused on the sandbox's read-only mount {where}"
    git = any(part == ".git" or part.endswith(".git") for part in Path(mount).parts)
    err.extra["sandbox"] = what + (
        ": git cannot change the repository here. Do not commit, branch or push: the runner lands the run's "
        "change itself after a successful run (agent-run --land); leave the change in the working tree."
        if git else ": this command cannot write there; write in the workspace or under $TMPDIR instead.")
    call = f"{ctx.agent}:{ctx.call_id}" if ctx.agent else ctx.call_id
    err.warnings.append(("sandbox_blocked", f"call {call}: {what}; the command failed ({err.message})"))
    return err


def _shown(path: str, workspace: Path) -> str:
    """A path as reported: relative to the workspace when inside it (as a command in it names it)."""
    full = Path(os.path.normpath(workspace / path))
    return str(full.relative_to(workspace)) if full.is_relative_to(workspace) and full != workspace else str(full)
