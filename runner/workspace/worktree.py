"""A private copy of a git workspace for one run (`--isolate worktree`, `batch -j N`).

`WORKSPACE/.agent-run/worktrees/<name>` is a repository of its own (the workspace's objects hard-linked
into it, so it costs little), checked out at the workspace's HEAD, with the workspace's uncommitted
changes to tracked files applied on top. It is a new repository rather than `git worktree add` on
purpose: nothing is written into the workspace's `.git`, and it is self-contained, so the sandbox
needs to show nothing outside it. Untracked files are not copied. Two runs in two worktrees never see
each other's changes; each run's `changes.patch` is its own.

No git here ever reads the workspace's `.git/config` (a filter, hook or fsmonitor it names would run on
the host, outside any sandbox): HEAD is read from the ref files, the uncommitted changes are taken by a
git whose git directory is a private one (an empty config, the workspace's objects as an alternate, a
copy of its index), and the objects are linked in by the runner itself, not by `git clone` (whose
upload-pack would read the source's config).

Worktrees are kept after the run (its workspace, for `resume`); `agent-run cleanup` removes old ones,
never one a run holds locked (`in_use`), and never through a symlink.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import shutil
import stat
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from runner.workspace.git import GitError, Repo, find_repo, isolated_env, run_git

WORKTREES = Path(".agent-run") / "worktrees"
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_OBJECT_ID = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")
_PER_WORKTREE_REFS = ("refs/bisect/", "refs/worktree/", "refs/rewritten/")


class WorktreeError(Exception):
    pass


def worktrees_dir(workspace: Path) -> Path:
    repo = find_repo(workspace)
    return (repo.top if repo else workspace) / WORKTREES


def create_worktree(workspace: Path, name: str) -> Path:
    """The workspace's counterpart inside a new worktree (the same subdirectory, if the workspace is one)."""
    repo = find_repo(workspace)
    if repo is None:
        raise WorktreeError(f"{workspace} is not in a git work tree: a worktree needs git (pass --shared-workspace "
                            "to run in it as it is)")
    if not name or "/" in name or name in (".", ".."):
        raise WorktreeError(f"not a worktree name: {name!r}")
    head = _head(repo)
    if head is None:
        raise WorktreeError(f"{repo.top} has no commit yet: a worktree starts from HEAD")
    trees = _worktrees_fd(repo.top)
    dest = repo.top / WORKTREES / name
    try:
        try:
            os.mkdir(name, 0o755, dir_fd=trees)
            dest_fd = os.open(name, _DIR, dir_fd=trees)
        except OSError as exc:
            raise WorktreeError(f"cannot create {dest}: {exc}") from None
        try:
            # Held while the copy is made, so a concurrent `cleanup` leaves a worktree still being created alone.
            fcntl.flock(dest_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            _populate(repo, workspace, head, dest_fd, dest)
        except BaseException:
            os.close(dest_fd)
            shutil.rmtree(name, ignore_errors=True, dir_fd=trees)
            raise
        os.close(dest_fd)
    finally:
        os.close(trees)
    return dest / workspace.resolve().relative_to(repo.top)


def _populate(repo: Repo, workspace: Path, head: str, dest_fd: int, dest: Path) -> None:
    """`git init` in dest, the workspace's objects linked in, HEAD checked out, its uncommitted changes applied."""
    here = _fd_path(dest_fd, dest)
    sha256 = ("--object-format=sha256",) if len(head) == 64 else ()
    with tempfile.TemporaryDirectory(prefix="agent-run-wt-") as home:
        env = isolated_env(home)
        env.update(GIT_OPTIONAL_LOCKS="0", GIT_NO_REPLACE_OBJECTS="1")
        try:
            dirty = _uncommitted(repo, workspace, head, Path(home), env)
            # Paths relative to the directory fd the child starts in: no discovery, nothing a symlink swapped in
            # since could redirect.
            mine = dict(env, GIT_DIR=".git", GIT_WORK_TREE=".")
            run_git("-c", "init.defaultBranch=main", "init", "-q", "--template=", *sha256, env=env, cwd=here)
            objects = _open_dir(_open_dir(dest_fd, ".git", close=False), "objects")
            try:
                _copy_objects(repo.common_dir / "objects", objects)
            finally:
                os.close(objects)
            run_git("checkout", "--quiet", "--detach", head, env=mine, cwd=here)
            if dirty:
                run_git("apply", "--binary", "--whitespace=nowarn", "-", env=mine, cwd=here, stdin=dirty)
        except GitError as exc:
            raise WorktreeError(f"cannot create the worktree {dest}: {exc}") from None
        except OSError as exc:
            raise WorktreeError(f"cannot create the worktree {dest}: {exc}") from None


def _uncommitted(repo: Repo, workspace: Path, head: str, home: Path, env: dict[str, str]) -> str:
    """`git diff --binary HEAD` of the workspace's tracked files, by a git directory of the runner's own (the
    sealed layout of runner/workspace/git.py): its config is empty, so a `.gitattributes` naming a filter or
    diff driver names nothing, and `.git/config` is never opened."""
    gd = home / "git"
    for sub in ("refs/heads", "refs/tags", "objects/info"):
        (gd / sub).mkdir(parents=True, exist_ok=True)
    (gd / "HEAD").write_text(head + "\n", encoding="ascii")
    config = "[core]\n\trepositoryformatversion = 0\n\tbare = false\n"
    if len(head) == 64:
        config = "[core]\n\trepositoryformatversion = 1\n\tbare = false\n[extensions]\n\tobjectformat = sha256\n"
    (gd / "config").write_text(config, encoding="ascii")
    (gd / "objects" / "info" / "alternates").write_text(f"{repo.common_dir / 'objects'}\n", encoding="utf-8")
    try:
        (gd / "index").write_bytes(_read_regular(repo.git_dir / "index", limit=None))
    except FileNotFoundError:
        return ""  # no index, so no tracked file to have changed (and an empty one would read as all deleted)
    env = dict(env, GIT_DIR=str(gd), GIT_WORK_TREE=str(repo.top), GIT_INDEX_FILE=str(gd / "index"))
    return run_git("diff", "--binary", "--no-ext-diff", "--no-textconv", head, "--", ".", ":(exclude).agent-run",
                   env=env, cwd=workspace).stdout


def _head(repo: Repo) -> str | None:
    """The commit HEAD names, read from the ref files as git would (None: no commit yet)."""
    if (repo.common_dir / "reftable").is_dir():
        raise WorktreeError(f"{repo.top} keeps its refs in a reftable: a worktree cannot read its HEAD")
    try:
        text = _read_regular(repo.git_dir / "HEAD").decode("utf-8", "replace").strip()
        for _ in range(5):
            if _OBJECT_ID.fullmatch(text):
                return text
            ref = text[len("ref:"):].strip() if text.startswith("ref:") else ""
            if not ref.startswith("refs/") or any(part in ("", ".", "..") for part in ref.split("/")):
                break
            base = repo.git_dir if ref.startswith(_PER_WORKTREE_REFS) else repo.common_dir
            try:
                text = _read_regular(base / ref).decode("utf-8", "replace").strip()
            except (FileNotFoundError, NotADirectoryError):
                return _packed_ref(repo.common_dir / "packed-refs", ref)
    except OSError as exc:
        raise WorktreeError(f"cannot read HEAD of {repo.top}: {exc}") from None
    raise WorktreeError(f"cannot read HEAD of {repo.top}: not a commit or a ref")


def _packed_ref(path: Path, ref: str) -> str | None:
    try:
        text = _read_regular(path, limit=None).decode("utf-8", "replace")
    except FileNotFoundError:
        return None
    for line in text.splitlines():
        oid, _, name = line.partition(" ")
        if name.strip() == ref and _OBJECT_ID.fullmatch(oid):
            return oid
    return None


def _read_regular(path: Path, limit: int | None = 4096) -> bytes:
    """A file's bytes, if it is a regular file (a FIFO or a device planted in `.git` would hang or never end)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    with open(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        return f.read() if limit is None else f.read(limit)


def _copy_objects(source: Path, dest_fd: int) -> None:
    """What `git clone --local` does for the object store: every regular file hard-linked (copied where a link
    is refused), symlinks and anything else inside it skipped, and `info/alternates` made absolute."""
    src = os.open(source, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        _copy_tree(src, dest_fd, [True])
        try:
            lines = _read_regular(source / "info" / "alternates", limit=None).decode("utf-8", "replace").splitlines()
        except FileNotFoundError:
            return
        # Relative alternates are relative to the source's object directory, which the copy is not in.
        absolute = [str(source / line) for line in (x.strip() for x in lines) if line and not line.startswith("#")]
        if absolute:
            info = _open_dir(dest_fd, "info", close=False)
            try:
                fd = os.open("alternates", os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                             0o644, dir_fd=info)
                with open(fd, "w", encoding="utf-8") as f:
                    f.write("".join(f"{line}\n" for line in absolute))
            finally:
                os.close(info)
    finally:
        os.close(src)


def _copy_tree(src: int, dst: int, link: list[bool], rel: str = "") -> None:
    with os.scandir(src) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                with contextlib.suppress(FileExistsError):
                    os.mkdir(entry.name, 0o755, dir_fd=dst)
                sub_src = os.open(entry.name, _DIR, dir_fd=src)
                try:
                    sub_dst = os.open(entry.name, _DIR, dir_fd=dst)
                    try:
                        _copy_tree(sub_src, sub_dst, link, f"{rel}{entry.name}/")
                    finally:
                        os.close(sub_dst)
                finally:
                    os.close(sub_src)
            elif entry.is_file(follow_symlinks=False) and f"{rel}{entry.name}" != "info/alternates":
                _copy_file(entry.name, src, dst, link)


def _copy_file(name: str, src: int, dst: int, link: list[bool]) -> None:
    if link[0]:
        try:
            os.link(name, name, src_dir_fd=src, dst_dir_fd=dst, follow_symlinks=False)
            return
        except FileExistsError:
            return
        except OSError:
            link[0] = False  # another device, or links to others' files refused: copy this and all the rest
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=src)
    except OSError:
        return
    with open(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return
        try:
            out = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o444,
                          dir_fd=dst)
        except FileExistsError:
            return
        with open(out, "wb") as g:
            shutil.copyfileobj(f, g, 1 << 20)


def _fd_path(fd: int, fallback: Path) -> str:
    """A path naming the directory fd itself, for a child's cwd: in the child `/proc/self/fd/N` is the same open
    directory (fds are inherited up to exec), whatever has been renamed or symlinked since."""
    proc = f"/proc/self/fd/{fd}"
    return proc if os.path.isdir(proc) else str(fallback)


def _open_dir(parent: int, name: str, *, create: bool = False, close: bool = True) -> int:
    """name under the directory fd parent, itself a directory and not a symlink (OSError, ELOOP or ENOTDIR,
    otherwise); closes parent unless told not to."""
    try:
        if create:
            with contextlib.suppress(FileExistsError):
                os.mkdir(name, 0o755, dir_fd=parent)
        return os.open(name, _DIR, dir_fd=parent)
    finally:
        if close:
            os.close(parent)


def _worktrees_fd(top: Path) -> int:
    """`top/.agent-run/worktrees`, created as needed, with `.agent-run/.gitignore`; WorktreeError when either
    directory or the .gitignore is a symlink (committed, or left by a model): following one would create
    directories and files wherever it points."""
    try:
        agent = _open_dir(os.open(top, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC), ".agent-run", create=True)
    except OSError as exc:
        raise WorktreeError(f"{top / '.agent-run'} is not a directory (a symlink?): {exc}") from None
    try:
        _ignore_all(agent, top / ".agent-run" / ".gitignore")
        return _open_dir(agent, "worktrees", create=True, close=False)
    except OSError as exc:
        raise WorktreeError(f"{top / WORKTREES} is not a directory (a symlink?): {exc}") from None
    finally:
        os.close(agent)


def _ignore_all(agent: int, path: Path) -> None:
    try:
        fd = os.open(".gitignore", os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644,
                     dir_fd=agent)
    except FileExistsError:
        if stat.S_ISLNK(os.stat(".gitignore", dir_fd=agent, follow_symlinks=False).st_mode):
            raise WorktreeError(f"{path} is a symlink: refusing to write through it") from None
        return
    with open(fd, "w", encoding="utf-8") as f:
        f.write("*\n")


def in_use(path: Path) -> bool:
    """Whether a run holds the worktree at path: an exclusive flock on its directory (or on one inside it, where
    a run in a subdirectory of the repository locks its workspace) cannot be taken at once — the lock
    runner/record/lock.py `lock_workspace` takes. A path that cannot be opened as a directory is not in use."""
    try:
        fd = os.open(path, _DIR)
    except OSError:
        return False
    try:
        return _locked_within(fd)
    finally:
        os.close(fd)


def _locked_within(fd: int) -> bool:
    return _locked(fd) or any(_locked(sub) for sub in _dirs_below(fd))


def _locked(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    fcntl.flock(fd, fcntl.LOCK_UN)
    return False


def _dirs_below(fd: int) -> Iterator[int]:
    """An fd of every directory below fd but `.git`, never through a symlink (each closed after use)."""
    try:
        with os.scandir(fd) as entries:
            names = [e.name for e in entries if e.is_dir(follow_symlinks=False) and e.name != ".git"]
    except OSError:
        return
    for name in names:
        try:
            sub = os.open(name, _DIR, dir_fd=fd)
        except OSError:
            continue
        try:
            yield sub
            yield from _dirs_below(sub)
        finally:
            os.close(sub)


def remove_older_worktrees(workspace: Path, max_age_s: float, *, dry_run: bool = False) -> list[Path]:
    """Worktrees not touched for max_age_s (`agent-run cleanup`), but none a run holds, and only what was
    really removed. Every level is opened without following a symlink: `.agent-run` or its `worktrees` may be
    one (committed, or made by a model), and following it would delete wherever it points."""
    root = worktrees_dir(workspace)
    try:
        top = os.open(root.parent.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        trees = _open_dir(_open_dir(top, ".agent-run"), "worktrees")
    except OSError:
        return []  # none yet, or not a real directory: nothing of ours to remove
    cutoff = time.time() - max_age_s
    removed = []
    try:
        for name in sorted(os.listdir(trees)):
            try:
                st = os.stat(name, dir_fd=trees, follow_symlinks=False)
            except OSError:
                continue
            if not stat.S_ISDIR(st.st_mode) or st.st_mtime >= cutoff:
                continue  # a symlink or a file is not a worktree the runner made: left alone
            try:
                fd = os.open(name, _DIR, dir_fd=trees)
            except OSError:
                continue
            try:
                # Keeping the root's lock while deleting stops a resume in it from starting meanwhile.
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue
                if any(_locked(sub) for sub in _dirs_below(fd)):
                    continue
                if not dry_run:
                    shutil.rmtree(name, ignore_errors=True, dir_fd=trees)
                    if _exists(name, trees):
                        continue
                removed.append(root / name)
            finally:
                os.close(fd)
    finally:
        os.close(trees)
    return removed


def _exists(name: str, dir_fd: int) -> bool:
    try:
        os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    except OSError:
        return True
    return True
