"""Hard limits no policy or mode lifts: deny rules placed after every other rule."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from runner.policy.agentfiles import AgentFiles
from runner.policy.gitdirs import is_git_control
from runner.policy.match import Pattern, compile_pattern, exact_pattern
from runner.policy.model import Rule
from runner.policy.targets import case_insensitive, path_target, target_path

HARD_LIMIT = "<hard limit>"
# How the git rule shows in `policy explain` and policy.json: what it matches is decided at each call.
GIT_CONTROL = "<git control: any path with a .git component, and the gitdirs and commondirs .git files name>"


def protected_paths(workspace: Path, runs_dir: Path, policy_files: Iterable[str],
                    inputs: Iterable[Path] = (), agent_files: AgentFiles | None = None) -> list[Path]:
    """The run's own records, the policy in use, the workflow's other inputs (`inputs`: --mcp-config,
    --instructions, --skills and --agents paths: trusted, so the agent must not rewrite them for a later
    replay or resume to read), and the repository's instructions, skills and profiles there now
    (`agent_files`: runner/policy/agentfiles.py). What git reads as its own is `git_control_rule`'s, decided
    at each call; an instruction file made later, `agent_files_rule`'s."""
    found = agent_files.existing(skip=(runs_dir.resolve(),)) if agent_files is not None else []
    return [runs_dir.resolve(), *(Path(f).resolve() for f in policy_files), *(p.resolve() for p in inputs),
            *(p.resolve() for p in found)]


def hard_limit_rules(workspace: Path, protected: Iterable[Path], agent_files: AgentFiles | None = None) -> list[Rule]:
    rules = [Rule("edit", compile_pattern(exact_pattern(path_target(workspace, p), subtree=True)), "deny",
                  HARD_LIMIT, i) for i, p in enumerate(protected)]
    rules.append(git_control_rule(workspace, len(rules)))
    if agent_files is not None:
        rules.append(Rule("edit", agent_files.pattern(), "deny", HARD_LIMIT, len(rules)))
    return rules


def git_control_rule(workspace: Path, index: int = 0) -> Rule:
    """Edits of what git reads as its own (runner/policy/gitdirs.py), as the sandbox mounts it read-only."""

    def test(scheme: str, rest: str) -> bool:
        path = target_path(workspace, f"{scheme}:{rest}")
        return path is not None and is_git_control(workspace, path, fold=case_insensitive(workspace))

    return Rule("edit", Pattern(GIT_CONTROL, "", test), "deny", HARD_LIMIT, index)
