"""zizmor (pinned in the dev extra, `--offline`: no GitHub API) over action.yml and every workflow, each file named
explicitly (given a directory, zizmor skips examples/workflows/): template injection, unpinned actions, excessive
permissions, credentials persisted by actions/checkout into artifacts, writes to $GITHUB_ENV/$GITHUB_PATH. It
finds nothing; a deliberate finding is suppressed inline (`# zizmor: ignore[rule] why`), and the set of those
is held here, so a new one is a decision someone reads (issue 43, item 2)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.test_workflows import ACTION, ROOT, WORKFLOWS

ZIZMOR = Path(sys.executable).parent / "zizmor"
FILES = [ACTION, *WORKFLOWS]
IGNORE = re.compile(r"#\s*zizmor:\s*ignore\[(?P<rules>[\w,\s-]+)\](?P<why>.*)$")

# (file, rule) of every inline ignore, and why it is deliberate.
DELIBERATE = {
    ("action.yml", "github-env"),  # PATH gets the action's own directory holding only the agent-run it installed
    ("examples/workflows/mention.yml", "dangerous-triggers"),  # issue_comment: the request is a writer's comment
    # pull_request_target: the fork's code is never checked out; a review-only run reads its diff through the API
    ("examples/workflows/fork-review.yml", "dangerous-triggers"),
    (".github/workflows/ci.yml", "self-repository"),  # `uses: ./`: the action under test is this checkout's
}


def zizmor(*args: str | Path) -> tuple[int, list[dict[str, Any]]]:
    proc = subprocess.run([str(ZIZMOR), "--offline", "--format", "json", "--quiet", *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    return proc.returncode, json.loads(proc.stdout or "[]")


def where(finding: dict[str, Any]) -> tuple[str, str]:
    primary = next(loc for loc in finding["locations"] if loc["symbolic"]["kind"] == "Primary")
    return primary["symbolic"]["key"]["Local"]["verbatim_path"], finding["ident"]


@pytest.fixture(scope="session")
def reports(tmp_path_factory) -> dict[str, tuple[int, list[dict[str, Any]]]]:
    """One invocation over every file as shipped, one with the ignores off, one over a planted injection."""
    planted = tmp_path_factory.mktemp("zizmor") / "planted.yml"
    planted.write_text("on: issues\npermissions: {}\njobs:\n  x:\n    runs-on: ubuntu-latest\n    steps:\n"
                       "      - run: echo \"${{ github.event.issue.title }}\"\n")
    files = [p.relative_to(ROOT) for p in FILES]
    return {"shipped": zizmor(*files), "no-ignores": zizmor("--no-ignores", *files), "planted": zizmor(planted)}


def test_zizmor_finds_nothing_in_the_action_and_the_workflows(reports):
    code, findings = reports["shipped"]
    assert [where(f) for f in findings] == [] and code == 0


def test_the_deliberate_findings_are_exactly_the_inline_ignores(reports):
    ignores = set()
    for path in FILES:
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if m := IGNORE.search(line):
                name = path.relative_to(ROOT).as_posix()
                assert m["why"].strip(), f"{name}:{n}: say why beside the ignore"
                ignores |= {(name, rule.strip()) for rule in m["rules"].split(",")}
    assert ignores == DELIBERATE
    # Each ignore suppresses a finding zizmor makes: none is stale.
    assert {where(f) for f in reports["no-ignores"][1]} == DELIBERATE


def test_zizmor_runs_offline_and_finds_a_planted_injection(reports):
    code, findings = reports["planted"]
    assert code != 0 and "template-injection" in {f["ident"] for f in findings}
