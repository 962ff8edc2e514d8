"""A summary.json of the wrong shape (hand-edited, truncated, another version's) is read as absent fields by
`runs list` and `runs show` (text, --json, --transcript): no traceback, exit 0, the rest still shown."""

from __future__ import annotations

import json
import shutil

from tests.fakes.openai_server import reply

_BAD_FIELDS = {"usage": "n/a", "denials": 5, "answer": {}, "agents": "x", "loop_warnings": 3, "changed_files": "a",
               "check": [1], "turns": "many", "duration_s": "1s", "resumed_from": "x", "exit_code": "0", "status": 7,
               "title": ["t"], "replay_of": 1, "loop": 2}
_BAD_NESTED = {"usage": {"prompt_tokens": "x", "completion_tokens": 5, "cost_usd": "free"},
               "denials": [5, {"call_id": "call_1_0", "tool": "bash", "rule": "r", "approve": "a", "replay": 3}],
               "agents": [1, {"id": "main", "usage": "n/a", "name": {}}, {"id": "a1", "name": [1], "depth": "2"}]}


def test_wrong_typed_summaries_read_as_absent_fields(fake, workspace, agent_run):
    fake.add(reply("done"))
    first = agent_run("task.md")
    assert first.code == 0, first.stderr
    assert [e["type"] for e in first.events][-1] == "run_finished" and first.summary["status"] == "success"
    variants = {"a-fields": {**first.summary, **_BAD_FIELDS}, "b-nested": {**first.summary, **_BAD_NESTED},
                "c-list": [first.summary], "d-null": None}
    runs_dir = first.run_dir.parent
    for name, summary in variants.items():
        copy = runs_dir / f"{first.run_dir.name}-{name}"
        shutil.copytree(first.run_dir, copy)
        if isinstance(summary, dict):
            summary = {**summary, "run_id": copy.name}
        (copy / "summary.json").write_text(json.dumps(summary), encoding="utf-8")

    listed = agent_run("runs", "list")
    assert listed.code == 0, listed.stderr
    rows = {line.split()[0]: line.split() for line in listed.stdout.splitlines()[1:]}
    assert len(rows) == 5 and "Traceback" not in listed.stderr
    fields = rows[f"{first.run_dir.name}-a-fields"]
    assert fields[1:4] == ["?", "-", "-"]  # status, exit and turns of the wrong type: absent
    assert rows[f"{first.run_dir.name}-c-list"][1] == "success"  # no summary object: what the events say

    shown_json = {}
    for name in variants:
        run = str(runs_dir / f"{first.run_dir.name}-{name}")
        text = agent_run("runs", "show", run)
        assert text.code == 0 and "Traceback" not in text.stderr, (name, text.stderr)
        assert text.stdout.startswith(f"run {first.run_dir.name}-{name}: ")
        if name in ("a-fields", "b-nested"):  # (no summary object at all reads as the events say, as before)
            as_json = agent_run("runs", "show", "--json", run)
            assert as_json.code == 0, (name, as_json.stderr)
            shown_json[name] = json.loads(as_json.stdout)
    fields = shown_json["a-fields"]["summary"]
    assert not {"answer", "usage", "status", "turns", "agents"} & set(fields)
    assert fields["model"] == first.summary["model"]
    assert shown_json["a-fields"]["denials"] == []  # the summary's `denials: 5` is absent: the log's, none
    nested = shown_json["b-nested"]
    assert nested["summary"]["usage"] == {"completion_tokens": 5}
    assert nested["denials"] == [{"call_id": "call_1_0", "tool": "bash"}]
    assert [a["id"] for a in nested["summary"]["agents"]] == ["main", "a1"]
    shown = agent_run("runs", "show", "--transcript", str(runs_dir / f"{first.run_dir.name}-a-fields"))
    assert shown.code == 0 and "## Final answer" in shown.stdout and "done" in shown.stdout, shown.stderr


def test_a_summary_that_is_a_link_or_oversized_is_not_read(fake, workspace, agent_run, tmp_path):
    """A copied run directory may hold anything: a summary.json that is a symlink (to a file elsewhere) is not
    followed, and one past 64 MiB (sparse here) is not read into memory; both are as absent."""
    fake.add(reply("done"))
    first = agent_run("task.md")
    assert first.code == 0, first.stderr
    runs_dir = first.run_dir.parent
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text(json.dumps({**first.summary, "status": "denied", "exit_code": 3}), encoding="utf-8")
    linked, big = runs_dir / f"{first.run_dir.name}-link", runs_dir / f"{first.run_dir.name}-big"
    for copy in (linked, big):
        shutil.copytree(first.run_dir, copy)
        (copy / "summary.json").unlink()
    (linked / "summary.json").symlink_to(elsewhere)
    with open(big / "summary.json", "wb") as f:
        f.truncate(65 << 20)
    listed = agent_run("runs", "list")
    assert listed.code == 0, listed.stderr
    rows = {line.split()[0]: line.split() for line in listed.stdout.splitlines()[1:]}
    assert rows[linked.name][1] == rows[big.name][1] == "success"  # what the events say, not the link's "denied"
