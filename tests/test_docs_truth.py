"""Docs that stay true (issue 43, item 5): CHANGELOG's first versioned heading is pyproject's version, `Unreleased`
above it only while that version is a development one; README's install section names no release, tag or owner
as if it existed; README's test count (held by tests/conftest.py on a run of the whole suite) is checked here as
the pure comparison it is."""

from __future__ import annotations

import re
import tomllib

from packaging.version import Version

from tests.conftest import readme_count_problem
from tests.test_workflows import ROOT

VERSION = Version(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"])


def test_the_changelogs_first_versioned_heading_is_pyprojects_version():
    headings = re.findall(r"^## (.+)$", (ROOT / "CHANGELOG.md").read_text(encoding="utf-8"), re.M)
    versioned = [h for h in headings if re.fullmatch(r"\d+(\.\d+)*", h)]
    assert versioned and versioned[0] == VERSION.base_version, (versioned[:1], str(VERSION))
    above = headings[:headings.index(versioned[0])]
    # `Unreleased` on top while pyproject says .devN (changes not in any release yet); nothing else, ever.
    assert above == (["Unreleased"] if VERSION.is_devrelease else []), above


def test_the_install_section_names_no_release_tag_or_owner_as_if_it_existed():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    install = readme[readme.index("## Install\n"):readme.index("\n## ", readme.index("## Install\n") + 1)]
    assert "No release of agent-run has been published yet" in install
    assert "-c constraints.txt ." in install  # from a checkout
    assert '"agent-run @ git+https://github.com/OWNER/agent-run@SHA"' in install  # at a commit: placeholders
    assert f"agent-run, version {VERSION}" in install
    # A tag (`@v0.2.0`) or a lowercase owner reads as a real place to install from: nowhere in README.
    assert not re.findall(r"agent-run@v\d|\bowner/agent-run|agent_run-\d[\w.]*\.whl", readme)


def test_readmes_test_count_is_held_within_ten_percent():
    assert readme_count_problem("…(~3,070 tests, 4 workers…", 3_300) is None
    assert readme_count_problem("…(~3,070 tests, 4 workers…", 2_800) is None
    assert readme_count_problem("…(~2,490 tests, 4 workers…", 2_864) == (
        "README.md says ~2,490 tests, 2,864 were collected (more than 10 % apart): update its count "
        "(`pytest --collect-only -q -n 0`)")
    assert readme_count_problem("no count", 10) == "README.md states no test count (`~N tests`)"
