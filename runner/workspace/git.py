"""The runner's own git, which must never run code the agent wrote.

At the start of the run (before the agent has done anything) git runs on the
repository as found then, pinned (`GIT_DIR`, `GIT_COMMON_DIR`, `GIT_WORK_TREE`), to
take the base commit. Then `seal()` switches every later invocation to a private
git directory of the runner's own: an empty config, the real object store as a
read-only alternate, a copy of the index. Whatever the agent writes afterwards —
`.git/config` (fsmonitor, filters, textconv, pager, external diff), `.git/hooks`,
`.git/commondir`, a nested `.git` file, `.gitattributes` naming a driver — names
nothing that exists for that git. No system or global config is read either, nor the
excludes and attributes files of a HOME: its HOME and XDG config dir are its own, even
inside the sandbox (whose scratch HOME the commands write), and with a sandbox it runs
inside one, the workspace read-only, no network.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# The files git reads beside its config are neutralised too: an excludes or attributes file in a HOME a command
# could write (`~/.config/git/ignore` with `*`) would hide new files from the audit record (changes.patch).
HARDENING = ("-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "-c", "core.pager=cat",
             "-c", "core.excludesFile=/dev/null", "-c", "core.attributesFile=/dev/null",
             "-c", "diff.external=", "-c", "core.untrackedCache=false", "-c", "core.sshCommand=false",
             "-c", "protocol.allow=never", "-c", "core.quotepath=off", "-c", "color.ui=false",
             "-c", "core.askPass=", "-c", "credential.helper=", "-c", "diff.noprefix=false")
SAFE_ENV = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ")


def isolated_env(home: str) -> dict[str, str]:
    """The environment of a git the runner runs for itself: no system or global config, no prompts, a HOME
    and XDG config dir of its own (so no ~/.gitconfig, no ~/.config/git/{config,ignore,attributes} either)."""
    env = {k: os.environ[k] for k in SAFE_ENV if k in os.environ}
    env.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL="/dev/null", GIT_PAGER="cat", PAGER="cat",
               GIT_TERMINAL_PROMPT="0", GIT_ATTR_NOSYSTEM="1", **own_home(home))
    return env


def own_home(home: str) -> dict[str, str]:
    return {"HOME": home, "XDG_CONFIG_HOME": os.path.join(home, ".config")}


class GitError(Exception):
    """A git the runner ran for itself did not do its job; `returncode` is None when it never finished."""

    def __init__(self, message: str, returncode: int | None = None, stderr: str = "") -> None:
        super().__init__(message)
        self.returncode = returncode
        self.stderr = stderr


def run_git(*args: str, env: Mapping[str, str], cwd: Path | str, stdin: str | None = None,
            timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """`git HARDENING args` with exactly `env` (build it with `isolated_env`): its output, or GitError when
    git is missing, hangs past `timeout`, or exits non-zero; a refusal for the caller to word, not a crash."""
    what = _subcommand(args)
    try:
        done = subprocess.run(["git", *HARDENING, *args], cwd=cwd, env=dict(env), input=stdin, capture_output=True,
                              text=True, timeout=timeout, stdin=None if stdin is not None else subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError) as exc:
        raise GitError(f"git {what} failed: {exc}") from None
    if done.returncode != 0:
        stderr = done.stderr.strip()
        raise GitError(f"git {what} failed: {stderr[-500:]}", done.returncode, stderr)
    return done


def _subcommand(args: tuple[str, ...]) -> str:
    """`clone` of `-c protocol.file.allow=always clone …`: what an error message names."""
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg in ("-c", "-C"):
            skip = True
        elif not arg.startswith("-"):
            return arg
    return "command"


@dataclass(frozen=True)
class Repo:
    git_dir: Path
    common_dir: Path
    top: Path


def find_repo(workspace: Path) -> Repo | None:
    """The repository containing the workspace, read from the files git itself would read,
    at the start of the run (before the agent could change anything)."""
    for top in (workspace, *workspace.parents):
        dot = top / ".git"
        if dot.is_dir():
            git_dir = dot
        elif dot.is_file():
            text = dot.read_text(encoding="utf-8", errors="replace").strip()
            if not text.startswith("gitdir:"):
                return None
            git_dir = (top / text[len("gitdir:") :].strip()).resolve()
        else:
            continue
        common = git_dir
        commondir = git_dir / "commondir"
        if commondir.is_file():
            common = (git_dir / commondir.read_text(encoding="utf-8", errors="replace").strip()).resolve()
        return Repo(git_dir.resolve(), common, top)
    return None


class SafeGit:
    def __init__(self, workspace: Path, sandbox: Any = None) -> None:
        self.workspace = workspace
        self.sandbox = sandbox
        self.repo = find_repo(workspace)
        self.private = Path(tempfile.mkdtemp(prefix="agent-run-git-"))
        (self.private / "objects").mkdir()
        self.env = isolated_env(str(self.private))
        self.env.update(GIT_OPTIONAL_LOCKS="0", GIT_NO_REPLACE_OBJECTS="1")
        if self.repo is not None:
            index = self.private / "index"
            with contextlib.suppress(OSError):
                shutil.copyfile(self.repo.git_dir / "index", index)
            self.env.update(GIT_DIR=str(self.repo.git_dir), GIT_COMMON_DIR=str(self.repo.common_dir),
                            GIT_WORK_TREE=str(self.repo.top), GIT_INDEX_FILE=str(index),
                            GIT_OBJECT_DIRECTORY=str(self.private / "objects"),
                            GIT_ALTERNATE_OBJECT_DIRECTORIES=str(self.repo.common_dir / "objects"))
        self._layout = None
        if sandbox is not None and sandbox.active:
            seen = [self.repo.top, self.repo.git_dir, self.repo.common_dir] if self.repo else []
            self._layout = sandbox.readonly_layout(seen, [self.private])

    def seal(self, base: str) -> None:
        """From now on, a private git directory whose HEAD is `base`; nothing of the repo's own is read
        but its objects (as an alternate) and, copied now, its index and info/exclude."""
        if self.repo is None:
            return
        gd = self.private / "git"
        for sub in ("refs/heads", "refs/tags", "info"):
            (gd / sub).mkdir(parents=True, exist_ok=True)
        (gd / "HEAD").write_text(base + "\n", encoding="ascii")
        (gd / "config").write_text("[core]\n\trepositoryformatversion = 0\n\tbare = false\n", encoding="ascii")
        with contextlib.suppress(OSError):
            shutil.copyfile(self.repo.common_dir / "info" / "exclude", gd / "info" / "exclude")
        (gd / "objects").symlink_to(self.private / "objects")
        self.env.update(GIT_DIR=str(gd), GIT_COMMON_DIR=str(gd))

    def __call__(self, *args: str, timeout: float = 60,
                 env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        """`env`: more variables for this one invocation (a scratch index of the runner's own)."""
        argv = ["git", *HARDENING, *args]
        full = {**self.env, **(env or {})}
        if self._layout is not None:
            argv, full = self.sandbox.wrap(argv, full, layout=self._layout)
            # The sandbox gives every process the commands' scratch HOME; the runner's git is another principal.
            full.update(own_home(str(self.private)))
        return subprocess.run(argv, cwd=self.workspace, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                              timeout=timeout, env=full)

    def close(self) -> None:
        shutil.rmtree(self.private, ignore_errors=True)
