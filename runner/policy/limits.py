"""Hard limits no policy or mode lifts: deny rules placed after every other rule."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from runner.policy.match import compile_pattern, exact_pattern
from runner.policy.model import Rule
from runner.policy.targets import path_target

HARD_LIMIT = "<hard limit>"


def protected_paths(workspace: Path, runs_dir: Path, policy_files: Iterable[str],
                    inputs: Iterable[Path] = ()) -> list[Path]:
    """The run's own records, the policy in use, the workflow's other inputs (`inputs`: --mcp-config,
    --instructions, --skills and --agents paths: trusted, so the agent must not rewrite them for a later
    replay or resume to read), and git's hooks and config."""
    git = workspace / ".git"
    return [runs_dir.resolve(), *(Path(f).resolve() for f in policy_files), *(p.resolve() for p in inputs),
            git / "hooks", git / "config"]


def hard_limit_rules(workspace: Path, protected: Iterable[Path]) -> list[Rule]:
    return [Rule("edit", compile_pattern(exact_pattern(path_target(workspace, p), subtree=True)), "deny",
                 HARD_LIMIT, i) for i, p in enumerate(protected)]
