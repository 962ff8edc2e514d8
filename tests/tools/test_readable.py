"""Files a listing tool meets are decided like reads (runner/tools/readable.py), hard links are decided
as reads outside the workspace, and a case-insensitive filesystem folds spellings (runner.policy.targets)."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import pytest

from runner.engine.cancel import RunCancel
from runner.policy.decide import decide
from runner.policy.limits import hard_limit_rules
from runner.policy.load import load_policy
from runner.policy.match import compile_pattern
from runner.policy.model import Rule, Target
from runner.policy.targets import case_insensitive, file_targets, path_targets, targets_for
from runner.run.review_only import ReviewOnly
from runner.tools import paths
from runner.tools.base import ToolContext, ToolError
from runner.tools.glob import Glob
from runner.tools.grep import Grep
from runner.tools.list import List
from runner.tools.readable import _literals, policy_decider

SECRETS = (".env", "deploy.pem", "id_rsa")


@pytest.fixture
def policy():
    return load_policy("default")


@pytest.fixture
def pctx(ws: Path, policy) -> ToolContext:
    """A tool context deciding as a run under the default policy does."""
    return ToolContext(workspace=ws, cancel=RunCancel(), decide=policy_decider(policy))


@pytest.fixture
def tree(ws: Path) -> Path:
    for rel in (*SECRETS, "src/.env.local", "notes.txt", "src/a.py"):
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text("needle\n")
    return ws


def test_grep_skips_what_read_could_not_open(pctx, tree):
    out = Grep().run({"pattern": "needle"}, pctx)
    assert out.content == ("notes.txt:1: needle\nsrc/a.py:1: needle\n"
                           "[4 files skipped: the policy does not allow reading them]")
    assert out.details == {"matches": 2, "files": 2, "files_matched": 2, "skipped": 4}


def test_glob_and_list_omit_the_names(pctx, tree):
    assert Glob().run({"pattern": "**/*"}, pctx).content == (
        "notes.txt\nsrc/a.py\n[4 files skipped: the policy does not allow reading them]")
    assert List().run({}, pctx).content == (
        "notes.txt\nsrc/\n[3 entries skipped: the policy does not allow reading them]")
    assert List().run({"path": "src"}, pctx).content == (
        "a.py\n[1 entry skipped: the policy does not allow reading it]")


def test_a_directory_of_secrets_only(pctx, ws):
    (ws / "keys").mkdir()
    (ws / "keys" / "id_rsa").write_text("x")
    assert List().run({"path": "keys"}, pctx).content == "[1 entry skipped: the policy does not allow reading it]"


def test_an_allow_rule_lets_them_through(ws, tree, policy):
    allow = Rule("read", compile_pattern("workspace:.env"), "allow", "--approve", 0)
    ctx = ToolContext(workspace=ws, cancel=RunCancel(), decide=policy_decider(policy.with_rules([allow])))
    assert Glob().run({"pattern": "*"}, ctx).content == (
        ".env\nnotes.txt\n[2 files skipped: the policy does not allow reading them]")


def test_without_a_decider_nothing_is_skipped(ctx, tree):
    assert len(Glob().run({"pattern": "**/*"}, ctx).content.splitlines()) == 6


def test_full_access_still_skips_what_needs_approval(ws, tree, policy):
    # Reading it by name is auto-approved and recorded; a search never shows it unrecorded.
    ctx = ToolContext(workspace=ws, cancel=RunCancel(), decide=policy_decider(policy.with_mode("full_access")))
    assert "[4 files skipped" in Grep().run({"pattern": "needle"}, ctx).content


def test_a_symlink_is_decided_where_it_leads(pctx, tree):
    (tree / "innocent.txt").symlink_to(".env")
    (tree / "lnk").symlink_to("src")
    assert Grep().run({"pattern": "needle", "include": "*.txt"}, pctx).content == (
        "notes.txt:1: needle\n[1 file skipped: the policy does not allow reading it]")
    # A leading folder that is a symlink: the files are decided under its target.
    assert Glob().run({"pattern": "lnk/*"}, pctx).content == (
        "lnk/a.py\n[1 file skipped: the policy does not allow reading it]")


def test_the_cap_decides_only_what_it_shows(pctx, ws, monkeypatch):
    monkeypatch.setattr("runner.tools.glob.MAX_MATCHES", 2)
    for name in ("a", "b", "c", "d"):
        (ws / name).write_text("")
    (ws / "a.pem").write_text("")
    out = Glob().run({"pattern": "*"}, pctx)
    assert out.content == ("a\nb\n[2 more matches not shown; narrow the pattern]\n"
                           "[1 file skipped: the policy does not allow reading it]")


# --- hard links ---------------------------------------------------------------------------------------------------


@pytest.fixture
def linked(ws: Path, tmp_path: Path) -> Path:
    key = tmp_path / "id_ed25519"
    key.write_text("needle\n")
    os.link(key, ws / "notes.txt")
    return ws / "notes.txt"


def test_a_hard_link_is_also_a_read_outside_the_workspace(ws, linked):
    first, link = path_targets("read", ws, linked, fold=False)
    assert first == Target("read", "workspace:notes.txt")
    assert link.target == f"fs:{linked}" and link.note.startswith("a hard link: 2 names")
    # Edits replace the name (atomic rename): the other names keep their content.
    assert path_targets("edit", ws, linked, fold=False) == [Target("edit", "workspace:notes.txt")]
    # Directories and single-named files are not hard links.
    (ws / "d").mkdir()
    (ws / "one.txt").write_text("")
    assert len(path_targets("read", ws, ws / "d", fold=False)) == len(path_targets("read", ws, ws / "one.txt",
                                                                                   fold=False)) == 1


def test_read_explain_and_shell_see_the_hard_link(ws, linked, policy):
    assert [t.target for t in targets_for("read", "notes.txt", ws)][-1] == f"fs:{linked}"
    ctx = ToolContext(workspace=ws, cancel=RunCancel())
    assert [t.target for t in paths.targets(ctx, "read", "notes.txt")][-1] == f"fs:{linked}"
    assert decide(policy, "read", file_targets("read", ws, "notes.txt")).decision == "ask"
    allow = Rule("read", compile_pattern(f"fs:{linked}"), "allow", "--approve", 0)
    assert decide(policy.with_rules([allow]), "read", file_targets("read", ws, "notes.txt")).decision == "allow"


def test_grep_names_the_hard_link_reason(ws, linked, pctx):
    assert Grep().run({"pattern": "needle"}, pctx).content == (
        "[no matches for `needle` in 0 files under `.`]\n"
        "[1 file skipped: hard-linked (its other names may be secrets); the policy does not allow reading it]")


# --- case-insensitive filesystems (Linux: the flag on) ------------------------------------------------------------


@pytest.mark.parametrize("raw", [".ENV", "Deploy.PEM", "ID_RSA", ".AWS/config", "sub/.Env.Local"])
def test_a_secret_in_any_case_asks_when_case_is_folded(ws, policy, raw):
    path = ws / raw
    assert decide(policy, "read", path_targets("read", ws, path, fold=True)).decision == "ask"
    assert decide(policy, "read", path_targets("read", ws, path, fold=False)).decision == "allow"


def test_the_spelling_on_disk_is_decided_too(ws):
    (ws / "Private").mkdir()
    (ws / "Private" / "Plan.md").write_text("")
    targets = [t.target for t in path_targets("read", ws, ws / "private" / "plan.MD", fold=True)]
    assert targets == ["workspace:private/plan.MD", "workspace:Private/Plan.md", "workspace:private/plan.md"]
    # Walked paths are spelled on disk already; outside the workspace nothing is folded.
    assert [t.target for t in path_targets("read", ws, ws / "Private", fold=True, on_disk=True)] == [
        "workspace:Private", "workspace:private"]
    assert [t.target for t in path_targets("read", ws, Path("/ETC/Hosts"), fold=True)] == ["fs:/ETC/Hosts"]


def test_a_hard_limit_holds_in_any_case(ws, tmp_path, policy):
    (ws / ".git").mkdir()
    (ws / ".git" / "config").write_text("")
    full = policy.with_rules(hard_limit_rules(ws, [ws / ".git" / "config"]))
    assert decide(full, "edit", path_targets("edit", ws, ws / ".GIT" / "CONFIG", fold=True)).decision == "deny"


def test_check_writable_folds_case_where_the_filesystem_does(ws, monkeypatch):
    ctx = ToolContext(workspace=ws, cancel=RunCancel(), protected=(ws / ".git" / "config",))
    paths.check_writable(ctx, ws / ".GIT" / "CONFIG")  # a different file where case matters
    monkeypatch.setattr(paths, "case_insensitive", lambda _: True)
    with pytest.raises(ToolError) as info:
        paths.check_writable(ctx, ws / ".GIT" / "CONFIG")
    assert info.value.type == "PathTraversalBlocked"


def test_the_probe(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    (tmp_path / "Mixed").write_text("")
    folds = (tmp_path / "mIXED").exists()
    assert case_insensitive(tmp_path) is folds
    assert case_insensitive(empty) is folds  # a temporary file was made, and removed
    assert list(empty.iterdir()) == []


# --- the fast decider decides exactly as decide() ----------------------------------------------------------------


def _pattern_corpus() -> list[str]:
    shipped = [r.pattern.raw for name in ("default", "ci", "strict") for r in load_policy(name).rules]
    odd = ["./x", "a/../b", "x//y", "**/.env/", "fs:/x/", "workspace:.", "a/**/b", "**/*[.]pem", "regex:.*\\.env",
           "**/id_*_key?", "workspace:src/**/*.py", "fs:/etc/**", "**/.aws/**", "?", "*", "**/"]
    return [*shipped, *odd]


def _target_corpus(ws: Path) -> list[str]:
    rels = [".", ".env", "a/.env", ".env.local", ".envrc", "x.pem", "a/b/id_rsa.pub", ".aws", ".aws/config", "a/b",
            "x", "src/m.py", ".git/config", "b", "a/x/y/b", "id_a_key1", "deploy.PEM"]
    return ([f"workspace:{r}" for r in rels]
            + [f"fs:{ws}/{r}" for r in rels] + ["fs:/etc/hosts", "fs:/x", "fs:/home/u/.ssh/id_rsa"])


def test_literal_runs_are_in_every_match(ws):
    for raw, target in itertools.product(_pattern_corpus(), _target_corpus(ws)):
        runs = _literals(raw)
        if runs is not None and compile_pattern(raw).matches(target):
            assert all(run in target for run in runs), (raw, target)


@pytest.mark.parametrize("name", ["default", "ci", "strict"])
def test_the_fast_decider_agrees_with_decide(ws, name):
    base = load_policy(name)
    odd = [Rule("*", compile_pattern(p), d, "t", i) for i, (p, d) in enumerate(
        [("regex:.*id_a.*", "deny"), ("workspace:a/**/b", "ask"), ("fs:/etc/**", "allow"), ("**/*[.]pem", "deny")])]
    for policy in (base, base.with_rules(odd), base.narrowed(load_policy("strict"))):
        fast = policy_decider(policy)
        for a, b in itertools.product(_target_corpus(ws), repeat=2):
            targets = [Target("read", a), Target("read", b, floor="ask" if b.endswith("b") else "allow")]
            want, got = decide(policy, "read", targets), fast(targets)
            assert (got.decision, got.deciding.rule) == (want.decision, want.deciding.rule), (a, b)


def test_a_review_only_runs_walks_skip_what_lies_outside_the_checkout(ws, tmp_path):
    outside = tmp_path / "home"
    outside.mkdir()
    (outside / "token").write_text("needle\n")
    (ws / "a.txt").write_text("needle\n")
    (ws / "token").symlink_to(outside / "token")
    ctx = ToolContext(workspace=ws, cancel=RunCancel(), restrict=ReviewOnly(tmp_path / "run"),
                      call_tool="glob")
    assert Glob().run({"pattern": "*"}, ctx).content == "a.txt\n[1 file skipped: outside the files you may read]"
