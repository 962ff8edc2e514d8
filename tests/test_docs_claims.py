"""Docs that are true (issue 24): claims in README.md and docs/*.md checked against the code and a real run, and
every test a doc links to as its proof exists. Runnable command blocks are tests/test_docs_runnable.py's."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from runner.policy.load import shipped_names
from runner.tools.base import ERROR_TYPES
from runner.tools.registry import core_tools
from tests.fakes.openai_server import reply

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SKILLS = ROOT / "tests" / "fixtures" / "skills"


def _read(rel: str) -> str:
    return (ROOT / rel).read_text(encoding="utf-8")


def _section(text: str, heading: str) -> str:
    return text.split(heading, 1)[1].split("\n#", 1)[0]


def test_the_docs_name_every_shipped_policy():
    shipped = sorted(p.stem for p in (ROOT / "policies").glob("*.jsonc"))
    assert shipped == shipped_names()
    readme = _read("README.md")
    row = next(line for line in readme.splitlines() if line.startswith("| `--policy PATH"))
    listed = re.search(r"shipped name \(([^:)]*)", row)
    assert listed is not None and sorted(re.findall(r"`([^`]+)`", listed[1])) == shipped, row
    sentence = re.search(r"Shipped: ([^.]*)\.", readme)
    assert sentence is not None and sorted(re.findall(r"`([^`]+)`", sentence[1])) == shipped
    table = _section(_read("docs/policies.md"), "## Shipped policies")
    assert sorted(re.findall(r"^\| `([a-z-]+)` \|", table, re.M)) == shipped


def test_tools_md_says_which_tools_a_run_offers(fake, workspace, agent_run):
    """docs/tools.md: the 12 core tools, then MCP tools, `skill` with skills, `task` unless the policy denies every
    profile — 13 under default, 14 with skills, 12 under strict."""
    intro = _read("docs/tools.md").split("<!-- generated: tools -->", 1)[0]
    core = core_tools().names
    assert f"these {len(core)} core tools" in intro
    assert f"offers {len(core) + 1} tools (`task` last), {len(core) + 2} with skills" in intro
    assert f"which denies `task`, the {len(core)}" in intro

    def offered(*args: str) -> list[str]:
        fake.add(reply("done"))
        r = agent_run(*args, "task.md")
        assert r.code == 0, r.stderr
        return [t["function"]["name"] for t in fake.requests[-1]["tools"]]

    assert offered("--skills", str(SKILLS)) == [*core, "skill", "task"]
    assert offered("--policy", "ci") == [*core, "task"]
    assert offered("--policy", "strict") == core


def test_tools_md_names_every_error_type():
    errors = _section(_read("docs/tools.md"), "## Errors").split("`ERROR_TYPES`")[0]
    assert re.findall(r"`([A-Z]\w+)`", errors) == list(ERROR_TYPES)


def test_what_a_stopped_or_failed_run_prints_next(fake, workspace, agent_run):
    """docs/sessions.md: a stopped run's last stderr line is its resume; a failed one's (a check, a schema, a cut-off
    answer) is `runs show … --transcript`; every summary.json has `resume`."""
    fake.add(reply(calls=[("list", {})]))
    stopped = agent_run("--max-turns", "1", "task.md")
    assert stopped.code == 5, stopped.stderr
    name = stopped.run_dir.name
    assert stopped.summary["resume"] == f"agent-run resume .agent-run/runs/{name}"
    assert stopped.stderr.splitlines()[-1].startswith(f"agent-run: next: {stopped.summary['resume']}  # continue")

    (workspace / "check.md").write_text("---\ncheck: test -f done.txt\n---\nCreate done.txt\n")
    fake.add(*[reply("done (not really)")] * 3)  # the check's 3 attempts (--check-attempts), each after an answer
    failed = agent_run("--approve", "bash:shell:test -f done.txt", "check.md")
    assert failed.code == 1 and failed.summary["check"]["ok"] is False, failed.stderr
    last = failed.stderr.splitlines()[-1]
    assert last.startswith("agent-run: next: agent-run runs show ") and failed.run_dir.name in last, last
    assert "--transcript" in last and failed.summary["resume"].startswith("agent-run resume ")


def test_a_server_that_needs_no_key_needs_none_once_the_base_url_is_set(fake, workspace, agent_run):
    fake.add(reply("no key needed"))
    r = agent_run("task.md", env={"OPENAI_API_KEY": ""})
    assert r.code == 0, r.stderr
    assert r.stdout.strip() == "no key needed"


LINK = re.compile(r"\[`?([^\]`]+)`?\]\(((?:\.\./)*tests/[^)#\s]+)\)")
NODE = re.compile(r"`(tests/[\w/]+\.py)::(\w+)`")


def _links() -> list[tuple[str, str, Path, str | None]]:
    """(doc, the link as written, the file it names, the test it names or None)."""
    found = []
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        for m in LINK.finditer(text):
            name = m[1].split("::")[-1]
            test = name if re.fullmatch(r"test_\w+", name) else None
            found.append((doc.name, m[0], (doc.parent / m[2]).resolve(), test))
        for m in NODE.finditer(text):
            found.append((doc.name, m[0], ROOT / m[1], m[2]))
    return found


def test_every_test_a_doc_links_to_exists():
    links = _links()
    assert len(links) >= 40  # README, sessions.md, tools.md and others link their claims to tests
    for doc, written, path, name in links:
        assert path.is_file(), f"{doc}: {written} names no file"
        if name is not None:
            assert re.search(rf"^def {name}\(", path.read_text(encoding="utf-8"), re.M), f"{doc}: {written}: no {name}"


@pytest.mark.parametrize("text", ["[test_x](../tests/a.py)", "`tests/a.py::test_x`"])
def test_the_link_reader_reads_both_forms(text, tmp_path, monkeypatch):
    doc = tmp_path / "docs" / "x.md"
    doc.parent.mkdir()
    doc.write_text(text)
    monkeypatch.setitem(globals(), "DOCS", [doc])
    monkeypatch.setitem(globals(), "ROOT", tmp_path)
    (_, _, path, name), = _links()
    assert path == tmp_path / "tests" / "a.py" and name == "test_x"
