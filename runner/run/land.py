"""Landing a run's change (`--land commit|branch|pr`): done by the runner once the run's own ending is known, before
`run_finished`, outside the sandbox, with a git of its own (runner/workspace/landgit.py) and the job's token.

Only a run that ended `success` with a change lands; any other ending lands nothing and says so (summary `land`,
a `land` event when the run reached its end), an empty change is a notice. What lands is exactly the change
tracker's record (the files `changes.patch` names, before the task's check), as one commit on the HEAD recorded
before the first tool call (a re-run: on the branch's tip when that is agent-run's own last commit for the same
key). Refused, naming the files (`land_failed`, exit 1; summary `run_status` keeps the run's own `success`): a
change to `.github/workflows/` without `--land-allow-workflows`, to a path the hard limits protect, or whose
content the masker would alter (a secret written into a file). Refused before the run (exit 2): tracked changes
at the start, a detached HEAD without `--land-base`, no token or no remote for a push.

The commit message and the pull request's text come from the task and the model: closing keywords and @-mentions
in them are defused; the only closing keyword is the runner's own `Closes #N` (github respond on an issue).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runner.core.events import Land
from runner.core.outcome import Status, UsageError
from runner.engine.recorder import Recording
from runner.record.mask import Masker
from runner.record.rundir import portable
from runner.report.changes import ChangeTracker
from runner.report.github_api import DEFAULT_API_URL, GitHub, GitHubError, RetryPolicy, grace_s
from runner.report.markdown import GITHUB_BODY_CHARS, code_span, fenced, fit
from runner.run.changes import ChangeRecord
from runner.run.options import LandTarget, RunOptions
from runner.run.task import Task
from runner.workspace.git import GitError, Repo, find_repo
from runner.workspace.landgit import Author, LandGit, file_entry, remote_problem, start_branch

DEFAULT_AUTHOR = Author("agent-run", "agent-run@users.noreply.github.com")
MAX_BODY = GITHUB_BODY_CHARS  # GitHub's limit on a pull request's body
MARKER = "<!-- agent-run:land:{key} -->"
WORKFLOWS = ".github/workflows/"
_AUTHOR = re.compile(r"\s*([^<>]+?)\s*<([^<>\s]+@[^<>\s]+)>\s*")
# GitHub's closing keywords before an issue: `#12`, `OWNER/REPO#12`, `GH-12` or the (pull request's) URL.
_CLOSING = re.compile(r"\b(close[sd]?|fix(?:e[sd])?|resolve[sd]?)(\s*:?\s+)(?:([\w.-]+/[\w.-]+)?#(\d+)|gh-(\d+)|"
                      r"(https?://[^\s/]+/[\w.-]+/[\w.-]+/(?:issues|pull)/\d+))", re.I)
_MENTION = re.compile(r"(?<![\w`])@(?=[A-Za-z0-9])")


def defused(text: str) -> str:
    """`text` with no closing keyword GitHub acts on (`Fixes #12`, `Fixes GH-12` → `Fixes issue 12`; `Fixes URL` →
    `Fixes issue URL`) and no @-mention."""
    text = _CLOSING.sub(lambda m: f"{m[1]}{m[2]}{(m[3] + ' ') if m[3] else ''}issue {m[4] or m[5] or m[6]}", text)
    return _MENTION.sub("@\u200b", text)


def slug(key: str) -> str:
    """A branch name's last part from a key: `tasks/Fix it.md` → `tasks-fix-it`."""
    text = re.sub(r"\.md$", "", key.strip(), flags=re.I)
    text = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.").lower()
    return re.sub(r"\.{2,}", ".", text)[:60].strip("-.") or "task"


def parse_author(text: str | None) -> Author:
    if not text:
        return DEFAULT_AUTHOR
    m = _AUTHOR.fullmatch(text)
    if m is None:
        raise UsageError(f"--commit-author {text!r} is not \"Name <email>\"")
    return Author(m[1], m[2])


@dataclass(frozen=True)
class Change:
    """What lands: the files, and the change tracker's patch of them (None: as the workspace holds them, for a
    continued run)."""

    files: list[str]
    patch: str | None
    # Without a patch: each file's mode and content as the workspace holds it (None: removed), read once, so what the
    # masker checked is what is committed.
    held: dict[str, tuple[str, bytes] | None] = field(default_factory=dict)


@dataclass
class Target:
    """Where the change goes, decided before the run: the mode, the branch, the base, the remote, the re-run key."""

    mode: str
    key: str
    repo: Repo
    prefix: str  # the workspace below the repository's top ("" at the top)
    head: str  # the commit before the first tool call
    start: str | None  # the branch the workspace was on
    author: Author
    branch: str | None = None
    base: str | None = None
    remote: str | None = None
    closes: int | None = None
    onto_head: str | None = None  # github respond on a same-repository pull request: its head commit
    github_repo: str | None = None  # OWNER/REPO for the pull request
    home_start: str | None = None  # --isolate worktree: the branch the workspace it was made from is on


@dataclass
class Landing:
    """One run's landing: decided in `prepare` (refusals exit 2 before the run), done at its end (`land`)."""

    target: Target
    opts: RunOptions
    environ: Mapping[str, str]
    record: dict[str, Any] = field(default_factory=dict)
    run_status: str | None = None

    @classmethod
    def decide(cls, rec: Recording, opts: RunOptions, tracker: ChangeTracker, task_path: Path,
               environ: Mapping[str, str]) -> Landing | None:
        """None without `--land`; UsageError for a landing that cannot be done (before any tool call)."""
        mode = opts.land or "none"
        if mode == "none":
            return None
        repo = find_repo(rec.workspace)
        if repo is None or tracker.head is None:
            raise UsageError(f"--land {mode} needs a git repository with a commit")
        continued = opts.land_to is not None and opts.land_to.earlier is not None
        if tracker.base != tracker.head and not continued:  # a continuation starts from its run's own change
            raise UsageError(f"--land {mode}: the workspace has uncommitted changes to tracked files at the start; "
                             "the agent's change could not be told from them (commit or stash them first)")
        target = Target(mode, _key(rec, opts, task_path), repo, _prefix(rec.workspace, repo), tracker.head,
                        start_branch(repo), parse_author(opts.commit_author))
        home = find_repo(rec.home) if rec.home is not None and rec.home != rec.workspace else None
        target.home_start = start_branch(home) if home is not None else None  # a worktree's own HEAD is detached
        if mode == "commit":
            if target.start is None:
                raise UsageError("--land commit needs a branch: the workspace is on a detached HEAD")
        else:
            _push_target(target, opts, environ)
        landing = cls(target, opts, environ)
        landing.record = {"mode": mode, "landed": False, "branch": target.branch or target.start,
                          "base": target.base, "commit": None, "remote": target.remote, "pull_request": None,
                          "refused": None, "key": target.key, "files": None, "reason": None}
        rec.lifecycle.on_summary(landing.summary)
        return landing

    def summary(self, data: dict[str, Any]) -> None:
        """summary.json `land` and `run_status`; a run that did not reach its landing says why nothing landed."""
        if self.run_status is None:
            self.record["reason"] = self.record["reason"] or f"nothing landed: the run ended {data.get('status')}"
        data["land"] = self.record
        data["run_status"] = self.run_status or data.get("status")

    def land(self, rec: Recording, task: Task, changes: ChangeRecord,
             ending: tuple[Status, str | None]) -> tuple[Status, str | None]:
        """Land the change of a run that ended `ending`; the run's ending, or `land_failed`."""
        status = ending[0]
        self.run_status = status.value
        if status is not Status.SUCCESS:
            return self._done(rec, ending, f"nothing landed: the run ended {status.value}")
        changes.take()
        if changes.changed is None or changes.patch is None:
            return self._failed(rec, f"the run's change could not be recorded: {changes.error}")
        earlier = self.opts.land_to.earlier if self.opts.land_to is not None else None
        # A continued run lands its runs' whole change, as the workspace holds it (no patch of its own covers it).
        change = Change(changes.changed, changes.patch) if earlier is None else \
            Change(sorted({*changes.changed, *earlier}), None)
        if not change.files:
            print("agent-run: land: the run changed nothing: nothing to land", file=sys.stderr)
            return self._done(rec, ending, "nothing landed: the run changed nothing")
        self.record["files"] = change.files
        git = LandGit(self.target.repo, direct=self.target.mode == "commit")
        try:
            if change.patch is None:
                change = Change(change.files, None, {f: file_entry(rec.workspace, f) for f in change.files})
            refused, why = self._refused(rec, change)
            if refused:
                return self._failed(rec, why, refused)
            return self._land(rec, git, task, change, ending)
        except GitError as exc:
            return self._failed(rec, rec.masker.mask(str(exc))[0])
        finally:
            git.close()

    def _land(self, rec: Recording, git: LandGit, task: Task, change: Change,
              ending: tuple[Status, str | None]) -> tuple[Status, str | None]:
        t = self.target
        message = commit_message(task, rec.answer, rec.run_id, t.key, rec.masker)
        if t.mode == "commit":
            assert t.start is not None
            sha = self._commit(rec, git, change, t.head, message)
            git.update_branch(t.start, sha, t.head)
            self.record.update(landed=True, commit=sha)
            return self._done(rec, ending, None)
        assert t.branch is not None and t.remote is not None
        token, grace = self.environ.get("GITHUB_TOKEN", ""), grace_s(self.environ)
        rec.ctx.cancel.kill_processes()  # no command of the run outlives it into the push (its environ holds the token)
        tip = git.tip(t.remote, t.branch, token, grace)
        parent, problem = self._parent(git, tip)
        if problem:
            return self._failed(rec, problem)
        sha = self._commit(rec, git, change, parent, message)
        git.push(t.remote, sha, t.branch, token, grace)
        self.record.update(commit=sha)
        if t.mode == "pr" and t.onto_head is None:
            try:
                self.record["pull_request"] = self._pull_request(rec, message, change.files, token, grace)
            except GitHubError as exc:
                return self._failed(rec, f"pushed {t.branch}, but the pull request could not be opened: "
                                                 f"{exc}; open it from {self._compare_url()}")
        self.record["landed"] = True
        return self._done(rec, ending, None)

    def _commit(self, rec: Recording, git: LandGit, change: Change, parent: str, message: str) -> str:
        t = self.target
        if change.patch is None:
            return git.commit_files(parent, t.prefix, change.held, message, t.author)
        if parent == t.head:
            return git.commit(parent, change.patch, t.prefix, message, t.author)
        try:
            return git.commit(parent, change.patch, t.prefix, message, t.author, three_way=True)
        except GitError as exc:
            raise GitError(f"the run's change conflicts with agent-run's last commit for {t.key} on {t.branch} "
                           f"({parent[:12]}), on which a re-run lands; nothing was pushed: {exc}") from None

    def _parent(self, git: LandGit, tip: str | None) -> tuple[str, str | None]:
        """The commit the change goes on: the recorded HEAD, or the branch's tip when it is agent-run's last
        commit for this key (github respond on a pull request: its head, which the workspace is checked out at)."""
        t = self.target
        if t.onto_head is not None:
            if tip != t.onto_head:
                return t.head, f"{t.branch} moved to {tip or 'nothing'} since the workspace was checked out at " \
                               f"{t.onto_head}: refused (never force-pushed)"
            return tip, None
        if tip is None or tip == t.head:
            return t.head, None
        author, message = git.message_of(tip)
        if author == str(t.author) and f"\nAgent-Run-Task: {t.key}\n" in f"\n{message}\n":
            return tip, None
        return t.head, f"the branch {t.branch} was moved by someone else (its tip {tip[:12]} is not agent-run's " \
                       f"last commit for {t.key}): refused, never force-pushed; pass --land-branch NAME"

    def _refused(self, rec: Recording, change: Change) -> tuple[list[str], str]:
        t, changed = self.target, change.files
        paths = {f: f"{t.prefix}/{f}" if t.prefix else f for f in changed}
        protected = [rec.workspace / f for f in changed]
        hard = [f for f, p in zip(changed, protected, strict=True)
                if ".git" in Path(paths[f]).parts or any(p == q or p.is_relative_to(q) for q in rec.ctx.protected)]
        if hard:
            return hard, "the change touches paths the hard limits protect: " + ", ".join(hard)
        workflows = [f for f in changed if paths[f].startswith(WORKFLOWS)]
        if workflows and not self.opts.land_allow_workflows:
            return workflows, (f"the change touches {WORKFLOWS} ({', '.join(workflows)}): refused without "
                               "--land-allow-workflows")
        texts = _chunks(change.patch, changed) if change.patch is not None else \
            [(f, (e[1] if (e := change.held[f]) else b"").decode("utf-8", "replace")) for f in changed]
        secret = [f for f, text in texts if rec.masker.mask(text)[0] != text]
        if secret:
            return secret, ("the change holds what the masker hides (a secret written into a file): "
                            + ", ".join(secret) + "; a commit would publish it")
        return [], ""

    def _pull_request(self, rec: Recording, message: str, changed: list[str], token: str,
                      grace: float) -> dict[str, Any]:
        t = self.target
        assert t.github_repo is not None and t.branch is not None
        owner, _, name = t.github_repo.partition("/")
        title = message.split("\n", 1)[0]
        body = pr_body(t, rec.masker.mask(rec.answer or "")[0], changed, rec.summary.usage, _job_url(self.environ),
                       rec.run_id)
        api = self.environ.get("GITHUB_API_URL") or DEFAULT_API_URL
        with GitHub(api, token, retry=RetryPolicy(retries=2, base_s=0.5, cap_s=2.0, max_wait_s=grace),
                    timeout_s=grace) as gh:
            base = f"repos/{owner}/{name}/pulls"
            found = gh.request("GET", base, params={"head": f"{owner}:{t.branch}", "state": "open"})
            if isinstance(found, list) and found and isinstance(found[0], dict) and "number" in found[0]:
                pr = gh.request("PATCH", f"{base}/{int(found[0]['number'])}", json={"title": title, "body": body})
            else:
                pr = gh.request("POST", base, json={"title": title, "head": t.branch, "base": t.base, "body": body,
                                                    "draft": not self.opts.land_ready})
        if not isinstance(pr, dict) or not isinstance(pr.get("number"), int):
            raise GitHubError(f"POST {base}: the answer names no pull request")
        return {"number": pr["number"], "url": str(pr.get("html_url") or "")}

    def _compare_url(self) -> str:
        server = (self.environ.get("GITHUB_SERVER_URL") or "https://github.com").rstrip("/")
        return f"{server}/{self.target.github_repo}/compare/{self.target.base}...{self.target.branch}?expand=1"

    def _failed(self, rec: Recording, why: str, refused: list[str] | None = None) -> tuple[Status, str | None]:
        self.record["refused"] = refused
        self._emit(rec, why)  # the CLI prints the ending, masked
        return Status.LAND_FAILED, f"the run succeeded, but its change was not landed: {why}"

    def _done(self, rec: Recording, ending: tuple[Status, str | None], why: str | None) -> tuple[Status, str | None]:
        self._emit(rec, why)
        return ending

    def _emit(self, rec: Recording, why: str | None) -> None:
        r = self.record
        r["reason"] = why
        rec.emit(Land(mode=r["mode"], branch=r["branch"], commit=r["commit"], remote=r["remote"],
                      pull_request=r["pull_request"], refused=r["refused"], reason=why))


def keep_recorded(opts: RunOptions, summary: Mapping[str, Any] | None, kind: str) -> None:
    """A resume or fork lands as the run it continues did (its summary `land`): the recorded mode, branch, base and
    remote, under the recorded key; another given now is UsageError. A run killed before its summary recorded
    none: what is given now is taken."""
    if summary is None:
        return
    land = summary.get("land") if isinstance(summary.get("land"), Mapping) else None
    recorded = {"land": land.get("mode"), "land_branch": land.get("branch"), "land_base": land.get("base"),
                "land_remote": land.get("remote")} if land else {"land": "none"}
    for name, value in recorded.items():
        given = getattr(opts, name)
        if given is not None and value is not None and given != value:
            flag = "--" + name.replace("_", "-")
            raise UsageError(f"{flag} {given}: the run lands with {flag} {value}; a {kind} keeps it")
        if value is not None:
            setattr(opts, name, value)
    if land and opts.land_to is None and isinstance(land.get("key"), str):
        earlier = {*(land.get("files") or ()), *(summary.get("changed_files") or ())}
        opts.land_to = LandTarget(key=land["key"], earlier=tuple(sorted(str(f) for f in earlier)))


def _push_target(target: Target, opts: RunOptions, environ: Mapping[str, str]) -> None:
    """Where a push goes (branch, pr), or UsageError: no token, no remote, a detached HEAD without --land-base."""
    lt = opts.land_to
    if not environ.get("GITHUB_TOKEN"):
        raise UsageError(f"--land {target.mode} pushes with the job's token: set GITHUB_TOKEN "
                         "(env: GITHUB_TOKEN: ${{ github.token }})")
    target.github_repo = environ.get("GITHUB_REPOSITORY") or None
    server = (environ.get("GITHUB_SERVER_URL") or "https://github.com").rstrip("/")
    target.remote = opts.land_remote or (f"{server}/{target.github_repo}" if target.github_repo else None)
    if target.remote is None:
        raise UsageError(f"--land {target.mode}: no remote: pass --land-remote URL or set GITHUB_REPOSITORY")
    source = "--land-remote" if opts.land_remote else "the remote from GITHUB_SERVER_URL and GITHUB_REPOSITORY"
    if (problem := remote_problem(target.remote, source)) is not None:
        raise UsageError(problem)
    if target.mode == "pr" and not target.github_repo:
        raise UsageError("--land pr opens the pull request in GITHUB_REPOSITORY (OWNER/REPO): set it")
    target.base = opts.land_base or target.start or target.home_start
    if target.base is None:
        raise UsageError(f"--land {target.mode}: the workspace is on a detached HEAD (a pull_request checkout): "
                         "pass --land-base BRANCH")
    if lt is not None and lt.head_branch is not None:
        if lt.head_sha != target.head:
            raise UsageError(f"--land {target.mode} on pull request #{lt.pull}: the workspace must be checked out "
                             f"at its head {lt.head_sha}, not {target.head}")
        target.branch, target.onto_head = lt.head_branch, lt.head_sha
    else:
        target.branch = opts.land_branch or f"agent-run/{slug(target.key)}"
        target.closes = lt.closes if lt is not None else None


def _key(rec: Recording, opts: RunOptions, task_path: Path) -> str:
    if opts.land_to is not None:
        return opts.land_to.key
    if task_path.is_relative_to(rec.run_dir) or opts.task == "-":  # the task came on stdin
        return "stdin"
    return portable(task_path, rec.home or rec.workspace)


def _prefix(workspace: Path, repo: Repo) -> str:
    rel = workspace.resolve().relative_to(repo.top.resolve()).as_posix()
    return "" if rel == "." else rel


def _chunks(patch: str, changed: list[str]) -> list[tuple[str, str]]:
    """Each changed file's part of the patch (the `diff --git` sections, in order, matched by name)."""
    parts = re.split(r"(?m)^(?=diff --git )", patch)
    out = []
    for name in changed:
        chunk = next((p for p in parts if p.startswith("diff --git ") and f" b/{name}\n" in p.split("\n", 1)[0] + "\n"),
                     None)
        out.append((name, chunk if chunk is not None else patch))
    return out


def _job_url(environ: Mapping[str, str]) -> str | None:
    server, repo, run = (environ.get(k) for k in ("GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_RUN_ID"))
    return f"{(server or 'https://github.com').rstrip('/')}/{repo}/actions/runs/{run}" if repo and run else None


def commit_message(task: Task, answer: str | None, run_id: str, key: str, masker: Masker) -> str:
    """Subject from the task's title (≤ 72 characters), the answer's first paragraph (masked), the trailers."""
    subject = " ".join(defused(masker.mask(task.title)[0]).split()) or "agent-run"
    if len(subject) > 72:
        subject = subject[:71].rstrip() + "…"
    first = (answer or "").strip().split("\n\n", 1)[0].strip()
    body = defused(masker.mask(first)[0]) if first else ""
    return f"{subject}\n\n" + (f"{body}\n\n" if body else "") + f"Agent-Run-Id: {run_id}\nAgent-Run-Task: {key}\n"


def pr_body(t: Target, answer: str, changed: list[str], usage: Mapping[str, Any], job: str | None,
            run_id: str) -> str:
    """The pull request's body: the marker, the runner's own `Closes #N`, the answer (fenced, defused), the files,
    tokens and cost, the job's link; at most GitHub's 65,536 characters. What does not fit is the answer's end, cut
    with a note that points to the whole answer in the run's directory (the job's artifact)."""
    head = [MARKER.format(key=t.key), ""] + ([f"Closes #{t.closes}", ""] if t.closes is not None else [])
    tail = [f"**Changed files ({len(changed)})**", ""] + [f"- {code_span(f, in_table=False)}" for f in changed[:100]]
    cost = usage.get("cost_usd")
    tail += ["", f"{usage.get('prompt_tokens', 0):,} prompt + {usage.get('completion_tokens', 0):,} completion tokens"
             + (f", ${cost:.4f}" if isinstance(cost, int | float) else "")]
    if job:
        tail += ["", f"Landed by agent-run from [the job run]({job})."]
    text = defused(answer.strip())  # defused before it is cut: defusing lengthens it
    where = f"the run's artifact from [the job run]({job})" if job else "its run directory"
    keep = len(text)
    while True:
        shown = [fenced(text[:keep], "text"), ""] if keep else []
        if keep < len(text):
            shown += [f"*(The answer is cut here, at {keep:,} of its {len(text):,} characters: the whole answer is "
                      f"`transcript.md` of run `{run_id}`, in {where}.)*", ""]
        body = "\n".join(head + shown + tail) + "\n"
        if len(body) <= MAX_BODY or keep == 0:
            break
        keep = max(0, keep - (len(body) - MAX_BODY))
    # Too long without any of the answer (the files' names): cut as every body posted to GitHub is.
    return fit(body, f"the whole answer and the files are `transcript.md` and `changes.patch` of run `{run_id}`, in "
                     f"{where}", MAX_BODY)
