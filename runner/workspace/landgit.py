"""The runner's git for landing a run's change (`--land`, runner/run/land.py): the commit, and its push.

A principal of its own, like the change tracker's git (runner/workspace/git.py): the hardened flags, an isolated
environment (no system or global config, a private HOME, no prompt, no credential helper) and a private git
directory whose only link to the repository is its object store, named as an alternate. The repository's
`.git/config` is never read, so an `insteadOf`, `pushurl`, `includeIf` or `extraheader` planted there can neither
redirect the push nor add to it. The commit is built from the change tracker's patch applied to a tree (never
`git add -A`), on the commit recorded before the first tool call.

The token reaches the push (and `ls-remote`/`fetch` of a re-run) through the environment only — `GIT_CONFIG_COUNT`
with `http.<exact URL>.extraheader`, after an empty `http.extraheader` that clears any other — never argv (readable
in /proc), a file or a record. Redirects are not followed (the header would go along).
"""

from __future__ import annotations

import base64
import os
import shutil
import stat
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from runner.workspace.git import HARDENING, GitError, Repo, isolated_env, run_git

# The push and the re-run's look at the branch: only http(s) (HARDENING says protocol.allow=never), no redirect.
NETWORK = ("-c", "protocol.https.allow=always", "-c", "protocol.http.allow=always", "-c", "http.followRedirects=false")


@dataclass(frozen=True)
class Author:
    name: str
    email: str

    def environ(self) -> dict[str, str]:
        return {"GIT_AUTHOR_NAME": self.name, "GIT_AUTHOR_EMAIL": self.email, "GIT_COMMITTER_NAME": self.name,
                "GIT_COMMITTER_EMAIL": self.email}

    def __str__(self) -> str:
        return f"{self.name} <{self.email}>"


def remote_problem(url: str, source: str = "--land-remote") -> str | None:
    """Why `url` (named in the message as `source`: the flag, or where it was read from) is not one the runner
    pushes to (https; http only to 127.0.0.1; no userinfo, query or fragment), or None."""
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http") or not parts.hostname:
        return f"{source} {url!r} is not an https URL (a URL, not a remote's name)"
    if parts.scheme == "http" and parts.hostname != "127.0.0.1":
        return f"{source} {url!r}: http only to 127.0.0.1; use https"
    if parts.username or parts.password or parts.query or parts.fragment:
        return f"{source} must not carry credentials, a query or a fragment (the token comes from GITHUB_TOKEN)"
    return None


def token_environ(url: str, token: str) -> dict[str, str]:
    """The token as git's configuration from the environment, for `url` exactly: how github.com takes a job token."""
    basic = base64.b64encode(f"x-access-token:{token}".encode()).decode("ascii")
    return {"GIT_CONFIG_COUNT": "2", "GIT_CONFIG_KEY_0": "http.extraheader", "GIT_CONFIG_VALUE_0": "",
            "GIT_CONFIG_KEY_1": f"http.{url}.extraheader", "GIT_CONFIG_VALUE_1": f"AUTHORIZATION: basic {basic}"}


class LandGit:
    """A private git directory over `repo`'s objects. `direct`: new objects go into the repository's own store (a
    commit that stays in the workspace, `--land commit`), else into the private one (a commit that is pushed)."""

    def __init__(self, repo: Repo, *, direct: bool = False) -> None:
        self.repo = repo
        self.private = Path(tempfile.mkdtemp(prefix="agent-run-land-"))
        gd = self.private / "git"
        for sub in ("refs/heads", "refs/tags", "objects/info"):
            (gd / sub).mkdir(parents=True, exist_ok=True)
        (gd / "HEAD").write_text("ref: refs/heads/land\n", encoding="ascii")
        (gd / "config").write_text("[core]\n\trepositoryformatversion = 0\n\tbare = true\n", encoding="ascii")
        objects = repo.common_dir / "objects"
        (gd / "objects" / "info" / "alternates").write_text(f"{objects}\n", encoding="utf-8")
        self.env = isolated_env(str(self.private))
        self.env.update(GIT_DIR=str(gd), GIT_INDEX_FILE=str(self.private / "index"), GIT_OPTIONAL_LOCKS="0",
                        GIT_NO_REPLACE_OBJECTS="1")
        if direct:
            self.env["GIT_OBJECT_DIRECTORY"] = str(objects)

    def __call__(self, *args: str, stdin: str | None = None, extra: dict[str, str] | None = None,
                 timeout: float = 60) -> str:
        return run_git(*args, env={**self.env, **(extra or {})}, cwd=self.private, stdin=stdin,
                       timeout=timeout).stdout

    def close(self) -> None:
        shutil.rmtree(self.private, ignore_errors=True)

    def commit(self, parent: str, patch: str, prefix: str, message: str, author: Author, *,
               three_way: bool = False) -> str:
        """A commit of `patch` (paths relative to `prefix`, the workspace below the repository's top) applied to
        `parent`'s tree, with `message`; GitError when it does not apply (`three_way`: on a later tip)."""
        self("read-tree", parent)
        where = [f"--directory={prefix}"] if prefix else []
        self("apply", "--cached", "--whitespace=nowarn", *(["--3way"] if three_way else []), *where, "-",
             stdin=patch)
        return self.commit_index(parent, message, author)

    def commit_files(self, parent: str, prefix: str, files: dict[str, tuple[str, bytes] | None], message: str,
                     author: Author) -> str:
        """A commit of `parent`'s tree with each of `files` (name -> its mode and content as the workspace holds it,
        `file_entry`; None: removed): a continued run's whole change, its earlier runs' part included, whatever
        `parent` already has of it."""
        self("read-tree", parent)
        for name, entry in files.items():
            path = f"{prefix}/{name}" if prefix else name
            if entry is None:
                self("update-index", "--force-remove", "--", path)
                continue
            mode, data = entry
            sha = self.hash_object(data)
            self("update-index", "--add", "--cacheinfo", f"{mode},{sha},{path}")
        return self.commit_index(parent, message, author)

    def commit_index(self, parent: str, message: str, author: Author) -> str:
        tree = self("write-tree").strip()
        return self("commit-tree", tree, "-p", parent, "-F", "-", stdin=message, extra=author.environ()).strip()

    def hash_object(self, data: bytes) -> str:
        """A blob of exactly `data` (no path, so no attribute or filter applies) in the private store."""
        try:
            done = subprocess.run(["git", *HARDENING, "hash-object", "-w", "--stdin"], input=data, env=self.env,
                                  cwd=self.private, capture_output=True, timeout=60)
        except (OSError, subprocess.SubprocessError) as exc:
            raise GitError(f"git hash-object failed: {exc}") from None
        if done.returncode != 0:
            raise GitError(f"git hash-object failed: {done.stderr.decode(errors='replace')[-500:]}", done.returncode)
        return done.stdout.decode().strip()

    def message_of(self, commit: str) -> tuple[str, str]:
        """A commit's author (`Name <email>`) and message."""
        out = self("log", "-1", "--format=%an <%ae>%x00%B", commit)
        author, _, body = out.partition("\0")
        return author, body

    def tip(self, url: str, branch: str, token: str, timeout: float) -> str | None:
        """The remote branch's commit, fetched into the private store, or None when there is no such branch."""
        auth = token_environ(url, token)
        out = self(*NETWORK, "ls-remote", "--heads", url, f"refs/heads/{branch}", extra=auth, timeout=timeout)
        sha = next((line.split("\t")[0] for line in out.splitlines() if line.endswith(f"\trefs/heads/{branch}")),
                   None)
        if sha:
            self(*NETWORK, "fetch", "--no-tags", "--no-write-fetch-head", url, f"refs/heads/{branch}", extra=auth,
                 timeout=timeout)
        return sha

    def push(self, url: str, commit: str, branch: str, token: str, timeout: float) -> None:
        """A fast-forward push of `commit` to `branch` (never forced); GitError with the server's words."""
        self(*NETWORK, "push", "--no-verify", url, f"{commit}:refs/heads/{branch}", extra=token_environ(url, token),
             timeout=timeout)

    def update_branch(self, branch: str, commit: str, old: str) -> None:
        """`--land commit`: the workspace's branch moved from `old` to `commit`, and its index read from it (the
        repository's ref store is written by git itself, hooks off; nothing else of its config runs)."""
        env = isolated_env(str(self.private))
        env.update(GIT_DIR=str(self.repo.git_dir), GIT_COMMON_DIR=str(self.repo.common_dir))
        run_git("update-ref", "-m", "agent-run: land", f"refs/heads/{branch}", commit, old, env=env,
                cwd=self.private)
        self("read-tree", commit, extra={"GIT_INDEX_FILE": str(self.repo.git_dir / "index")})


def file_entry(workspace: Path, name: str) -> tuple[str, bytes] | None:
    """`name`'s git mode and content as the workspace holds it, read without following a symlink (a link is kept
    as a link); None when it is gone. GitError for what git cannot hold or a path through a symlinked directory."""
    path = workspace / name
    if path.parent.resolve() != (workspace.resolve() / name).parent:
        raise GitError(f"{name} lies through a symbolic link: not landed")
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(st.st_mode):
        return "120000", os.fsencode(os.readlink(path))
    if not stat.S_ISREG(st.st_mode):
        raise GitError(f"{name} is not a regular file or a symbolic link: not landed")
    # O_NONBLOCK and the check on what was opened: a FIFO put in its place since the lstat is refused, never waited on.
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise GitError(f"{name} is not a regular file or a symbolic link: not landed")
        data = f.read()
    return ("100755" if st.st_mode & 0o111 else "100644"), data


def start_branch(repo: Repo) -> str | None:
    """The branch the repository's HEAD names (read from the file git reads), or None on a detached HEAD."""
    try:
        head = (repo.git_dir / "HEAD").read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None
    return head.removeprefix("ref: refs/heads/") if head.startswith("ref: refs/heads/") else None

