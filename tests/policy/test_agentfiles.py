"""Which paths are repository instructions, skills and profiles (runner/policy/agentfiles.py), and which edit allow
rules of the trusted policy opt out of their protection: only one whose literal prefix names such a path."""

from __future__ import annotations

import json
from pathlib import Path, PurePosixPath

import pytest

from runner.policy.agentfiles import AgentFiles, is_agent_file
from runner.policy.load import load_policy, parse_approval


@pytest.mark.parametrize(("path", "protected"), [
    ("AGENTS.md", True), ("docs/CLAUDE.md", True), (".agents/skills/x/SKILL.md", True),
    (".claude/skills/x/run.sh", True), (".agents/agents/rev.md", True), ("pkg/.claude/agents/a.md", True),
    (".agents/skills", True), (".agents/README.md", False), ("skills/x/SKILL.md", False), ("AGENTS.md.bak", False),
    ("src/agents.py", False),
])
def test_what_is_protected(path, protected):
    assert is_agent_file(PurePosixPath(path).parts) is protected


@pytest.mark.parametrize(("pattern", "exempt", "still"), [
    ("workspace:AGENTS.md", ["AGENTS.md"], ["docs/AGENTS.md", ".agents/skills/x/SKILL.md"]),
    ("workspace:.agents/skills/**", [".agents/skills/x/SKILL.md", ".agents/skills/new/a.sh"],
     [".claude/skills/x/SKILL.md", "AGENTS.md"]),
    ("workspace:.agents/skills/x/*", [".agents/skills/x/SKILL.md"], [".agents/skills/y/SKILL.md"]),
    ("workspace:**", [], ["AGENTS.md", ".agents/skills/x/SKILL.md"]),
    ("workspace:.agents/**", [], [".agents/skills/x/SKILL.md", ".agents/agents/a.md"]),
    ("**/AGENTS.md", [], ["AGENTS.md", "docs/AGENTS.md"]),
    ("regex:AGENTS\\.md", [], ["AGENTS.md"]),
])
def test_an_edit_allow_rule_opts_out_only_of_what_its_literal_prefix_names(tmp_path: Path, pattern, exempt, still):
    rule = {"domain": "edit", "pattern": pattern, "decision": "allow"}
    (tmp_path / "p.jsonc").write_text(json.dumps({"extends": "default", "permission": {"rules": [rule]}}))
    files = AgentFiles.of(tmp_path, load_policy(str(tmp_path / "p.jsonc")))
    assert [p for p in exempt if files.protects(PurePosixPath(p).parts)] == []
    assert [p for p in still if not files.protects(PurePosixPath(p).parts)] == []


def test_an_approval_or_a_deny_rule_opts_out_of_nothing(tmp_path: Path):
    policy = load_policy("default").with_rules([parse_approval("edit:workspace:AGENTS.md", 0)])
    assert AgentFiles.of(tmp_path, policy).protects(("AGENTS.md",))


def test_the_existing_ones_are_listed_whole_directories_at_a_time(tmp_path: Path):
    for rel in ("AGENTS.md", "a/b/CLAUDE.md", ".agents/skills/x/SKILL.md", ".claude/agents/r.md", ".git/AGENTS.md",
                "src/main.py", ".agent-run/runs/r1/AGENTS.md"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x")
    runs = (tmp_path / ".agent-run" / "runs").resolve()
    found = sorted(p.relative_to(tmp_path.resolve()).as_posix() for p in AgentFiles(tmp_path).existing(skip=(runs,)))
    assert found == [".agents/skills", ".claude/agents", "AGENTS.md", "a/b/CLAUDE.md"]


def _every_name_decided(files: AgentFiles, skip: tuple[Path, ...]) -> list[Path]:
    """The walk before it passed over names (os.walk, every file and directory decided): what `existing` must
    still find, in the same order."""
    import os

    root = files.workspace.resolve()
    out: list[Path] = []
    for top, dirs, names in os.walk(root):
        here = Path(top)
        rel = here.relative_to(root).parts
        dirs[:] = [d for d in dirs if d != ".git" and here / d not in skip and not os.path.islink(here / d)]
        for d in list(dirs):
            parts = (*rel, d)
            folded = tuple(p.casefold() for p in parts) if files.fold else parts
            if files.protects(parts) and not any(e[:len(parts)] == folded for e in files.exempt):
                out.append(here / d)
                dirs.remove(d)
        out += [here / f for f in names if files.protects((*rel, f))]
    return out


@pytest.mark.parametrize("fold", [False, True])
def test_the_walk_finds_what_deciding_every_name_finds(tmp_path: Path, fold: bool):
    for rel in ("AGENTS.md", "Agents.MD", "src/a.py", "x/y/z/claude.md", "x/y/skills/s.md", "p/.Agents/Skills/k.md",
                ".agents/skills/keep/SKILL.md", ".agents/skills/free/SKILL.md", ".agents/skills/free/AGENTS.md",
                ".agents/agent-run.toml", ".AGENTS/Agent-Run.TOML", "q/.claude/agents", "r/agents/a.md",
                ".git/AGENTS.md", "runs/AGENTS.md", "deep/a/b/c/d/.claude/skills/t/run.sh"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x")
    (tmp_path / "linked").symlink_to(tmp_path / ".agents")
    (tmp_path / "l" / ".agents").mkdir(parents=True)
    (tmp_path / "l" / ".agents" / "skills").symlink_to(tmp_path / "src")
    (tmp_path / "CLAUDE.md").symlink_to(tmp_path / "src" / "a.py")
    files = AgentFiles(tmp_path, ((".agents", "skills", "free"),), fold)
    skip = ((tmp_path / "runs").resolve(),)
    found = files.existing(skip=skip)
    assert found == _every_name_decided(files, skip)
    shown = {p.relative_to(tmp_path.resolve()).as_posix() for p in found}
    assert {"AGENTS.md", "CLAUDE.md", "x/y/z/claude.md", ".agents/skills/keep", ".agents/agent-run.toml",
            "deep/a/b/c/d/.claude/skills", "q/.claude/agents"} <= shown
    assert (".agents/skills/free/AGENTS.md" in shown, "p/.Agents/Skills" in shown) == (False, fold)
