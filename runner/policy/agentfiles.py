"""What a later run in the checkout follows: the repository's instructions (`AGENTS.md`, `CLAUDE.md`, at any depth),
skills (`.agents/skills/`, `.claude/skills/`), subagent profiles (`.agents/agents/`, `.claude/agents/`) and its
agent-run config (`.agents/agent-run.toml`: runner/run/repoconfig.py). An agent
that rewrote them would steer that run, so they are protected as the policy files are (runner/policy/limits.py): a
hard-limit rule for every edit of such a path, existing or not, and the existing ones in the run's protected paths
(the file tools refuse them, the sandbox mounts them read-only).

The opt-out is the trusted policy's own: an `edit` allow rule of one of its files whose glob pattern's literal prefix
names such a path (`workspace:AGENTS.md`, `workspace:.agents/skills/**`, `workspace:docs/CLAUDE.md`) leaves what is
at or below that path to the policy. `workspace:**` or `workspace:.agents/**` name none of them: they opt out of
nothing. An `--approve` or an untrusted task's policy never opts out.
"""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from runner.policy.index import glob_prefix
from runner.policy.match import Pattern, split_target
from runner.policy.model import Policy
from runner.policy.targets import case_insensitive

NAMES = frozenset({"agents.md", "claude.md"})  # case-folded
REPO_CONFIG = (".agents", "agent-run.toml")
DIRS = frozenset({(".agents", "skills"), (".claude", "skills"), (".agents", "agents"), (".claude", "agents")})
AGENT_FILES = "<repository instructions, skills and agent profiles: AGENTS.md, CLAUDE.md, .agents/ and .claude/ " \
              "skills and agents>"  # how the rule shows in `policy explain` and policy.json

Parts = tuple[str, ...]


def is_agent_file(parts: Parts, *, fold: bool = False) -> bool:
    """Whether the workspace-relative path `parts` is an instruction file or at or below a skills or agents
    directory. `AGENTS.md` and `CLAUDE.md` are matched whatever their case (the name a reader looks up may be
    spelled either way on a filesystem that ignores case); the directories as spelled, or folded with `fold`."""
    if parts and parts[-1].casefold() in NAMES:
        return True
    if len(parts) >= 2 and _folded(parts[-2:], fold) == REPO_CONFIG:
        return True  # the repository's agent-run config (runner/run/assemble.py repository_config)
    seen = tuple(p.casefold() for p in parts) if fold else parts
    return any(pair in DIRS for pair in itertools.pairwise(seen))


@dataclass(frozen=True)
class AgentFiles:
    workspace: Path
    exempt: tuple[Parts, ...] = ()  # what the trusted policy's edit allow rules name
    fold: bool = False  # the workspace's filesystem ignores case

    @classmethod
    def of(cls, workspace: Path, policy: Policy) -> AgentFiles:
        fold = case_insensitive(workspace)
        files = set(policy.files)
        exempt = []
        for rule in policy.rules:
            if rule.source in files and rule.domain == "edit" and rule.decision == "allow":
                root = _named(rule.pattern)
                if root and is_agent_file(root, fold=fold):
                    exempt.append(_folded(root, fold))
        return cls(workspace, tuple(exempt), fold)

    def protects(self, parts: Parts) -> bool:
        if not is_agent_file(parts, fold=self.fold):
            return False
        seen = _folded(parts, self.fold)
        return not any(seen[:len(e)] == e for e in self.exempt)

    def pattern(self) -> Pattern:
        """Matches every such path inside the workspace, existing or not (the hard limit's, runner/policy/limits.py)."""

        def test(scheme: str, rest: str) -> bool:
            return scheme == "workspace" and rest != "." and self.protects(PurePosixPath(rest).parts)

        return Pattern(AGENT_FILES, "", test)

    def existing(self, skip: tuple[Path, ...] = ()) -> list[Path]:
        """The protected files and directories in the workspace now (a directory stands for all below it, unless an
        exempt path lies there), in os.walk's order (top-down, a directory's entries in scandir's order, its
        directories before its files). Read once per run: `.git`, symlinked directories and `skip` (resolved: the
        runs directory, protected whole already) are not entered.

        Every directory is read — a later run may have any of them as its workspace, and follow what lies there —
        but only a name that may be protected is decided (`_MAY_BE`): the walk costs scandir and little more."""
        root = self.workspace.resolve()
        skipped = {str(p) for p in skip}
        out: list[Path] = []
        # (directory, its parts below the root, whether it lies in a skills or agents directory already)
        stack: list[tuple[str, Parts, bool]] = [(str(root), (), False)]
        while stack:
            top, rel, inside = stack.pop()
            try:
                with os.scandir(top) as it:
                    entries = list(it)
            except OSError:  # as os.walk: a directory that cannot be read is passed over
                continue
            dirs: list[os.DirEntry[str]] = []
            files: list[os.DirEntry[str]] = []
            for entry in entries:
                try:
                    is_dir = entry.is_dir()
                except OSError:
                    is_dir = False
                (dirs if is_dir else files).append(entry)
            below = []
            for entry in dirs:
                name = entry.name
                if name == ".git" or entry.path in skipped or entry.is_symlink():
                    continue
                parts = (*rel, name)
                if (inside or name.casefold() in _MAY_BE) and self.protects(parts) and \
                        not any(e[:len(parts)] == _folded(parts, self.fold) for e in self.exempt):
                    out.append(Path(entry.path))
                    continue
                below.append((entry.path, parts, inside or _folded(parts[-2:], self.fold) in DIRS))
            out += [Path(e.path) for e in files
                    if (inside or e.name.casefold() in _MAY_BE) and self.protects((*rel, e.name))]
            stack += reversed(below)  # os.walk's order: the first directory is walked first
        return out


# A name that may make a path protected where no skills or agents directory lies above it: an instruction file, the
# repository's config, or a skills or agents directory (each decided by `protects`, exactly; this only passes over the
# rest, case-folded so that it never passes over what a folding filesystem would match).
_MAY_BE = frozenset({*NAMES, REPO_CONFIG[1], *(d for _, d in DIRS)})


def _named(pattern: Pattern) -> Parts | None:
    """The path a glob pattern's literal prefix names (whole components), or None (a regex, another scheme)."""
    if pattern.kind != "glob" or pattern.raw == "*":
        return None
    scheme, body = split_target(pattern.raw)
    if scheme not in ("", "workspace"):
        return None
    prefix = glob_prefix(body)
    if prefix != body:
        prefix = prefix.rpartition("/")[0]
    parts = tuple(p for p in PurePosixPath(prefix).parts if p != ".")
    return parts if parts and ".." not in parts and not prefix.startswith("/") else None


def _folded(parts: Parts, fold: bool) -> Parts:
    return tuple(p.casefold() for p in parts) if fold else parts
