"""Every file a tool touches is decided (issue 11), through the real CLI: grep, glob and list skip
what the policy would not let `read` open, hard links are not a way around a secret's name, the
secret list is complete, and on a case-insensitive filesystem `.ENV` is `.env`."""

from __future__ import annotations

import json
import os
import re
import uuid
from pathlib import Path

import pytest

from tests.fakes.openai_server import reply

SKIP_NOTE = "skipped: the policy does not allow reading"


def _marker(rel: str) -> str:
    """Plain words, so that no log masking (high entropy, key blocks) could be what hides them."""
    return "MARKER-" + re.sub(r"[^a-z]+", "-", rel).strip("-") + "-zebra"


def _secrets(ws: Path) -> dict[str, str]:
    """The usual secrets, each holding a marker of its own; notes.txt is the control, shown as is."""
    markers = {}
    for rel in (".env", "deploy.pem", "id_rsa"):
        markers[rel] = _marker(rel)
        (ws / rel).write_text(f"SECRET word {markers[rel]}\n")
    (ws / "notes.txt").write_text("SECRET is a word in the notes\n")
    return markers


def _assert_hidden(r, fake, *markers: str) -> None:
    """Neither the model (tool results, requests) nor the run's records saw any marker."""
    raw = (r.run_dir / "events.jsonl").read_text(encoding="utf-8")
    seen = json.dumps(fake.requests)
    for marker in markers:
        assert marker not in raw
        assert marker not in seen
        assert all(marker not in e["content"] for e in r.of_type("tool_result"))


def _results(r) -> list[str]:
    return [e["content"] for e in r.of_type("tool_result")]


def test_grep_skips_secret_files_and_says_how_many(fake, workspace, agent_run):
    markers = _secrets(workspace)
    fake.add(reply(calls=[("grep", {"pattern": "SECRET", "path": "."})]), reply("done"))
    r = agent_run("--sandbox", "off", "task.md")
    assert r.code == 0, r.stderr
    _assert_hidden(r, fake, *markers.values())
    [content] = _results(r)
    assert content.splitlines()[0] == "notes.txt:1: SECRET is a word in the notes"
    assert f"[3 files {SKIP_NOTE} them]" in content
    assert r.summary["denials"] == []  # a silent skip, not a denial of the call


def test_grep_include_naming_an_ignored_secret_skips_it(fake, workspace, agent_run):
    markers = _secrets(workspace)
    (workspace / ".gitignore").write_text(".env\n")
    fake.add(reply(calls=[("grep", {"pattern": "SECRET", "include": ".env"})]), reply("done"))
    r = agent_run("--sandbox", "off", "task.md")
    assert r.code == 0, r.stderr
    _assert_hidden(r, fake, markers[".env"])
    assert _results(r) == [f"[no matches for `SECRET` in 0 files under `.`, include `.env`]\n[1 file {SKIP_NOTE} it]"]


def test_grep_does_not_read_a_secret_through_an_innocent_symlink(fake, workspace, agent_run):
    markers = _secrets(workspace)
    (workspace / "settings.txt").symlink_to(".env")
    fake.add(reply(calls=[("grep", {"pattern": "SECRET", "include": "*.txt"})]), reply("done"))
    r = agent_run("--sandbox", "off", "task.md")
    assert r.code == 0, r.stderr
    _assert_hidden(r, fake, markers[".env"])
    assert _results(r) == [f"notes.txt:1: SECRET is a word in the notes\n[1 file {SKIP_NOTE} it]"]


def test_glob_and_list_do_not_reveal_secret_names(fake, workspace, agent_run):
    _secrets(workspace)
    fake.add(reply(calls=[("glob", {"pattern": "**/*"}), ("list", {})]), reply("done"))
    r = agent_run("--sandbox", "off", "task.md")
    assert r.code == 0, r.stderr
    globbed, listed = _results(r)
    assert globbed == f"notes.txt\ntask.md\n[3 files {SKIP_NOTE} them]"
    assert listed == f".agent-run/ (ignored)\nnotes.txt\ntask.md\n[3 entries {SKIP_NOTE} them]"


@pytest.fixture
def hard_link(tmp_path: Path, workspace: Path) -> tuple[Path, str]:
    """`notes.txt` in the workspace is another name of a key outside it."""
    marker = _marker("hard link")
    key = tmp_path / "home" / ".ssh" / "id_ed25519"
    key.parent.mkdir(parents=True)
    key.write_text(f"PRIVATE word {marker}\n")
    os.link(key, workspace / "notes.txt")
    return workspace / "notes.txt", marker


def test_a_hard_link_is_not_read_or_searched_without_approval(fake, workspace, agent_run, hard_link):
    _, marker = hard_link
    fake.add(reply(calls=[("read", {"path": "notes.txt"})]),
             reply(calls=[("grep", {"pattern": "PRIVATE"})]), reply("done"))
    r = agent_run("--sandbox", "off", "task.md")
    assert r.code == 3, r.stderr
    _assert_hidden(r, fake, marker)
    read, grep = _results(r)
    err = json.loads(read)["error"]
    assert (err["type"], err["target"]) == ("ApprovalRequired", f"fs:{workspace.resolve() / 'notes.txt'}")
    assert "hard link" in err["note"]
    assert grep == ("[no matches for `PRIVATE` in 1 file under `.`]\n"
                    "[1 file skipped: hard-linked (its other names may be secrets); "
                    "the policy does not allow reading it]")


def test_a_hard_link_the_policy_allows_explicitly_is_read(fake, workspace, agent_run, hard_link):
    path, marker = hard_link
    fake.add(reply(calls=[("read", {"path": "notes.txt"})]), reply("done"))
    r = agent_run("--sandbox", "off", "--approve", f"read:fs:{path.resolve()}", "task.md")
    assert r.code == 0, r.stderr
    assert _results(r) == [f"1\tPRIVATE word {marker}"]


SECRETS = [".envrc", "id_dsa", "id_dsa.pub", "id_ecdsa", "id_ed25519", ".pgpass", "release.jks", "app.keystore",
           ".aws/config", ".aws/sso/cache/token.json", ".docker/config.json", ".kube/config", ".netrc",
           ".git-credentials"]


def test_the_default_secret_list(fake, tmp_path, workspace, agent_run):
    markers = {}
    for rel in SECRETS:
        markers[rel] = _marker(rel)
        (workspace / rel).parent.mkdir(parents=True, exist_ok=True)
        (workspace / rel).write_text(markers[rel] + "\n")
    # The default policy, with room for one denial per file.
    (tmp_path / "p.jsonc").write_text('{"extends": "default", "permission": {"maxDenials": 100}}')
    fake.add(reply(calls=[("read", {"path": rel}) for rel in SECRETS]), reply("done"))
    r = agent_run("--sandbox", "off", "--policy", str(tmp_path / "p.jsonc"), "task.md")
    errors = {rel: json.loads(c).get("error", {}).get("type") if c.startswith("{") else "shown"
              for rel, c in zip(SECRETS, _results(r), strict=True)}
    assert errors == dict.fromkeys(SECRETS, "ApprovalRequired")
    _assert_hidden(r, fake, *markers.values())
    assert r.code == 3


def _folds_case(directory: Path) -> bool:
    probe = directory / f"Case-{uuid.uuid4().hex}"
    probe.write_text("")
    try:
        return (directory / probe.name.swapcase()).exists()
    finally:
        probe.unlink()


def test_on_a_case_insensitive_filesystem_a_secret_is_one_in_any_case(fake, workspace, agent_run):
    if not _folds_case(workspace):
        pytest.skip("needs a case-insensitive filesystem; Linux tests the rule with the flag on "
                    "(tests/tools/test_readable.py)")
    markers = _secrets(workspace)
    fake.add(reply(calls=[("read", {"path": ".ENV"})]), reply(calls=[("grep", {"pattern": "SECRET"})]),
             reply("done"))
    r = agent_run("--sandbox", "off", "task.md")
    assert r.code == 3, r.stderr
    _assert_hidden(r, fake, *markers.values())
    assert json.loads(_results(r)[0])["error"]["type"] == "ApprovalRequired"
