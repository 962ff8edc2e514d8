"""runner/subagents/profiles.py: the profile format (Claude Code's agents), discovery and its warnings."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.subagents.builtin import ALIASES
from runner.subagents.profiles import GENERAL, ProfileError, discover, load_profile, recorded_dirs, trusted_dirs

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "agents"


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_the_shipped_examples_load_without_warnings():
    for path in sorted(EXAMPLES.glob("*.md")):
        profile, warnings = load_profile(path, trusted=True, aliases=ALIASES)
        assert warnings == [] and profile.name == path.stem and profile.tools and profile.body


def test_claude_names_map_and_bash_patterns_narrow(tmp_path):
    path = _write(tmp_path / "r.md", "---\nname: r\ndescription: d\ntools: Read, Grep, LS, Bash(git log:*)\n"
                                     "model: sonnet\ncolor: red\n---\nbody\n")
    profile, warnings = load_profile(path, trusted=False, aliases=ALIASES)
    assert profile.tools == (("read", None), ("grep", None), ("list", None), ("bash", "git log *"))
    assert profile.model is None  # a Claude alias: the run's model
    assert any("unknown key 'color'" in w for w in warnings) and any("Claude alias" in w for w in warnings)


@pytest.mark.parametrize(("front", "message"), [
    ("name: x", "needs a description"),
    ("name: two words\ndescription: d", "one word"),
    ("name: x\ndescription: d\nmax_turns: 0", "max_turns must be a positive integer"),
    ("name: x\ndescription: d\nmax_turns: true", "max_turns must be a positive integer"),
    ("name: x\ndescription: d\nmode: bypassPermissions", "mode must be one of agent, full_access"),
    ("name: x\ndescription: d\ntools: Bash(", "tools entry"),
    ("- a list", "must be a mapping"),
    ("name: x\ndescription: d\npaths:\n  write: [/etc]", "must be inside the workspace"),
    ("name: x\ndescription: d\npaths:\n  read: [src/../../x]", "must be inside the workspace"),
    ("name: x\ndescription: d\npaths: [src]", "paths must be a mapping"),
    ("name: x\ndescription: d\npaths:\n  edit: [src]", "paths must be a mapping"),
    ("name: x\ndescription: d\ndisallowedTools: Bash(rm:*)", "tool names or globs"),
])
def test_a_bad_profile_says_what_is_wrong(tmp_path, front, message):
    path = _write(tmp_path / "x.md", f"---\n{front}\n---\nbody\n")
    with pytest.raises(ProfileError, match=message):
        load_profile(path, trusted=False, aliases=ALIASES)


def test_discovery_order_trust_and_the_builtin(tmp_path):
    ws = tmp_path / "ws"
    trusted = tmp_path / "trusted"
    _write(trusted / "rev.md", "---\nname: rev\ndescription: trusted one\n---\n")
    _write(ws / ".agents/agents/rev.md", "---\nname: rev\ndescription: repository one\n---\n")
    _write(ws / ".agents/agents/other.md", "---\nname: other\ndescription: repository one\n---\n")
    _write(ws / ".claude/agents/other.md", "---\nname: other\ndescription: the second\n---\n")
    _write(ws / ".claude/agents/broken.md", "no front matter\n")
    (ws / ".agents/agents/link.md").symlink_to(trusted / "rev.md")
    found = discover(ws.resolve(), [trusted.resolve()], aliases=ALIASES)
    profiles, warnings = found.profiles, found.warnings
    assert list(profiles) == [GENERAL, "rev", "other"]
    assert profiles["rev"].trusted and profiles["rev"].description == "trusted one"
    assert not profiles["other"].trusted and profiles["other"].description == "repository one"
    assert any("already defined" in w for w in warnings) and any("broken.md" in w for w in warnings)
    assert not any("link.md" in w for w in warnings)  # a symlink is skipped silently, never read
    assert found.shadowed == [".agents/agents/rev.md: repository profile 'rev' takes the name of the trusted "
                              f"profile 'rev' ({trusted.resolve() / 'rev.md'}); not loaded"]
    bare = discover((tmp_path / "empty").resolve(), [], aliases=ALIASES).profiles
    assert list(bare) == [GENERAL] and bare[GENERAL].path is None


@pytest.mark.parametrize(("where", "name"), [(".agents/agents", "general"), (".claude/agents", "General"),
                                             (".agents/agents", "REV")])
def test_a_repository_profile_never_takes_a_trusted_name(tmp_path, where, name):
    ws, trusted = tmp_path / "ws", tmp_path / "trusted"
    _write(trusted / "rev.md", "---\nname: rev\ndescription: trusted one\n---\n")
    _write(ws / where / f"{name}.md", "---\ndescription: the repository's\n---\nobey me\n")
    found = discover(ws.resolve(), [trusted.resolve()], aliases=ALIASES)
    assert list(found.profiles) == [GENERAL, "rev"] and found.profiles[GENERAL].path is None
    assert found.profiles["rev"].trusted
    [refused] = found.shadowed
    assert refused.startswith(f"{where}/{name}.md: repository profile {name!r}") and "not loaded" in refused


def test_a_trusted_profile_may_replace_the_builtin(tmp_path):
    _write(tmp_path / "trusted" / "general.md", "---\ndescription: ours\n---\nbody\n")
    found = discover((tmp_path / "ws").resolve(), [(tmp_path / "trusted").resolve()], aliases=ALIASES)
    assert found.profiles[GENERAL].trusted and found.profiles[GENERAL].description == "ours"
    assert found.shadowed == []


def test_trusted_dirs_and_the_dirs_a_replay_finds_again(tmp_path):
    policy = tmp_path / "pol" / "p.jsonc"
    (tmp_path / "pol" / "agents").mkdir(parents=True)
    assert trusted_dirs(["x"], str(policy), {"profiles": ["agents"]})[-1] == (tmp_path / "pol" / "agents").resolve()
    summary = {"subagent_profiles": [{"name": "a", "path": "pol/agents/a.md", "trusted": True},
                                     {"name": "g", "path": "builtin", "trusted": True},
                                     {"name": "r", "path": ".agents/agents/r.md", "trusted": False},
                                     {"name": "gone", "path": "gone/x.md", "trusted": True}]}
    assert recorded_dirs(summary, tmp_path) == [str(tmp_path / "pol" / "agents")]
