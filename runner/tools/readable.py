"""Which files a listing tool may read or show: those the policy would let `read` open.

`grep`, `glob` and `list` are decided on the directory they start from; every file they then
meet is decided here, as `read` of that file would be (its resolved path, a hard link's `fs:`
target, other spellings where case is ignored), without an audit record: first by what narrows
the agent's policy (a subagent's paths scope: a symlink in a directory it may read leads nowhere
outside it), then by the policy. Only `allow` counts: a file that needs approval is skipped even
in full_access mode, where reading it by name is auto-approved and recorded. Skipped files are
counted, never shown.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from runner.policy.decide import CallDecision, decide
from runner.policy.match import split_target
from runner.policy.model import Policy, Target
from runner.policy.targets import HARD_LINK, case_insensitive, path_targets
from runner.tools.base import ToolContext
from runner.tools.paths import escaped

T = TypeVar("T")
POLICY = "policy"
RESTRICTED = "restricted"


class Readable:
    """One per call: decides each file, remembers resolved directories, counts what it skips."""

    def __init__(self, ctx: ToolContext) -> None:
        self.ctx = ctx
        self.fold = case_insensitive(ctx.workspace)
        self.skipped: Counter[str] = Counter()  # reason -> files
        self._dirs: dict[str, str] = {}

    def check(self, path: Path) -> Path | None:
        """`path` (absolute, as walked) resolved, or None when it cannot be resolved or the policy
        would not let `read` open it (counted)."""
        real = self.real(path)
        # No symlink on the way: the walk spelled it as the disk does.
        return real if real is not None and self.allows(real, walked=real == path) else None

    def allows(self, real: Path, *, walked: bool = False) -> bool:
        """Whether `read` of the resolved `real` would be allowed; counted when not."""
        ctx = self.ctx
        if ctx.decide is None and ctx.restrict is None:
            return True
        targets = escaped(path_targets("read", ctx.workspace, real, fold=self.fold, on_disk=walked))
        if ctx.restrict is not None and ctx.restrict.refuses(ctx.call_tool, targets) is not None:
            self.skipped[RESTRICTED] += 1
            return False
        if ctx.decide is None:
            return True
        decision = ctx.decide(targets)
        if decision.decision == "allow":
            return True
        note = decision.deciding.target.note or ""
        self.skipped[HARD_LINK if note.startswith(HARD_LINK) else POLICY] += 1
        return False

    def real(self, path: Path | str) -> Path | None:
        """Resolved, each directory once: walks do not follow symlinked directories, but a path's
        leading folders (`lnk/**/*.py`) may be one."""
        head, name = os.path.split(str(path))
        try:
            parent = self._dirs.get(head)
            if parent is None:
                parent = self._dirs[head] = os.path.realpath(head, strict=False)
            full = os.path.join(parent, name)
            return Path(os.path.realpath(full, strict=False) if os.path.islink(full) else full)
        except (OSError, ValueError):
            return None

    def first(self, items: list[T], limit: int, path: Callable[[T], Path]) -> tuple[list[T], int]:
        """Up to `limit` of `items`, in order, that `read` could open, and how many items were left
        after them, undecided: a listing decides what it shows, not what its cap leaves out."""
        kept: list[T] = []
        for i, item in enumerate(items):
            if len(kept) == limit:
                return kept, len(items) - i
            if self.check(path(item)) is not None:
                kept.append(item)
        return kept, 0

    def note(self, noun: str, plural: str) -> str:
        """`[3 files skipped: …]` lines, one per reason; empty when nothing was skipped."""
        lines = []
        for reason in (POLICY, HARD_LINK, RESTRICTED):
            n = self.skipped[reason]
            if not n:
                continue
            them = "it" if n == 1 else "them"
            why = f"the policy does not allow reading {them}" if reason == POLICY else (
                "outside the files you may read" if reason == RESTRICTED else
                f"hard-linked ({'its' if n == 1 else 'their'} other names may be secrets); "
                f"the policy does not allow reading {them}")
            lines.append(f"[{n} {noun if n == 1 else plural} skipped: {why}]")
        return "\n".join(lines)

    @property
    def count(self) -> int:
        return sum(self.skipped.values())

    def details(self) -> dict[str, int]:
        """For the tool result's details: `skipped`, when anything was."""
        return {"skipped": self.count} if self.count else {}


def policy_decider(policy: Policy) -> Callable[[list[Target]], CallDecision]:
    """`decide(policy, domain, targets)`, fast enough to run once per file of a large tree.

    Before deciding, the rules that cannot match any of the targets are left out: a path glob matches
    only strings that contain each of its literal runs (`.env` in `**/.env`, `.pem` in `**/*.pem`). The
    rules left are decided by `decide` itself, in their order, so the answer is the same. (A narrowing
    policy, rare, is decided in full.)"""
    literals = [_literals(rule.pattern.raw) for rule in policy.rules]
    runs = sorted({run for found in literals if found for run in found})
    # Which rules may match depends only on the targets' domains and on which runs they contain.
    keys: dict[tuple[frozenset[str], frozenset[str]], tuple[int, ...]] = {}
    views: dict[tuple[int, ...], Policy] = {}

    def candidates(domains: frozenset[str], present: frozenset[str]) -> tuple[int, ...]:
        return tuple(i for i, (rule, found) in enumerate(zip(policy.rules, literals, strict=True))
                     if (rule.domain == "*" or rule.domain in domains) and (found is None or found <= present))

    def decide_fast(targets: list[Target]) -> CallDecision:
        # A run found in any target keeps the rule: more rules than needed, never fewer. (No path holds a NUL.)
        text = "\0".join(t.target for t in targets)
        text = text.casefold() if _FOLDS else text
        present = frozenset(run for run in runs if run in text)
        domains = frozenset(t.domain for t in targets)
        key = keys.get((domains, present))
        if key is None:
            key = keys[domains, present] = candidates(domains, present)
        view = views.get(key)
        if view is None:
            view = views[key] = Policy(policy.path, policy.mode, [policy.rules[i] for i in key], policy.files,
                                       policy.sections, policy.resolved, policy.narrowed_by)
        return decide(view, targets[0].domain, targets)

    return decide_fast


_FOLDS = os.path.normcase("A") == "a"  # wcmatch then ignores case too


def _literals(raw: str) -> frozenset[str] | None:
    """Substrings every target the pattern matches contains; None when that cannot be told cheaply."""
    if raw.startswith("regex:") or any(c in raw for c in "\\[{"):
        return None
    scheme, body = split_target(raw)
    if scheme in ("shell", "query"):  # text globs: `git *` also matches `git`
        return None
    runs = (run for segment in body.split("/") for run in re.split(r"[*?]+", segment) if run)
    return frozenset(r.casefold() if _FOLDS else r for r in runs)
