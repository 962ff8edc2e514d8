"""Issue 34 item 4, through the real CLI: tools that spare the context on big repositories. grep's
`output_mode` (files, count) and `limit`; bash's and read's `tail_lines`/`max_lines` (bounded by the policy's
truncation.maxLines); read's `file_sha256` of the whole file; list's 1,000-entry cap."""

from __future__ import annotations

import hashlib
import json

from tests.fakes.openai_server import reply


def test_grep_modes_line_limits_file_hash_and_the_list_cap(fake, workspace, agent_run):
    (workspace / "src").mkdir()
    for i in range(3):
        (workspace / "src" / f"m{i}.py").write_text("TODO one\n" * (i + 1))
    log = "".join(f"log line {i}\n" for i in range(1, 5001)).encode()
    (workspace / "build.log").write_bytes(log)
    (workspace / "many").mkdir()
    for i in range(1005):
        (workspace / "many" / f"e{i:04d}").write_text("")
    (workspace / "policy.json").write_text(json.dumps(
        {"extends": "default", "truncation": {"maxLines": 1500}}))
    fake.add(reply(calls=[("grep", {"pattern": "TODO", "path": "src", "output_mode": "files", "limit": 2})]),
             reply(calls=[("grep", {"pattern": "TODO", "path": "src", "output_mode": "count"})]),
             reply(calls=[("bash", {"command": "seq 1 5000", "tail_lines": 3})]),
             reply(calls=[("bash", {"command": "seq 1 5000", "max_lines": 3000})]),
             reply(calls=[("read", {"path": "build.log", "tail_lines": 2})]),
             reply(calls=[("list", {"path": "many"})]), reply("done"))
    r = agent_run("--sandbox", "off", "--policy", "policy.json", "--approve", "bash:shell:*", "task.md")
    assert r.code == 0, r.stderr
    files, count, tail, head, read, listed = r.of_type("tool_result")
    assert files["content"] == "src/m0.py\nsrc/m1.py\n[1 more files not shown; narrow the pattern or path]"
    assert count["content"] == "src/m0.py:1\nsrc/m1.py:2\nsrc/m2.py:3\n[6 matching lines in 3 files]"
    assert tail["content"].endswith("\n\n4998\n4999\n5000\n") and "\n4997\n" not in tail["content"]
    assert "...4997 lines truncated..." in tail["content"] and tail["details"]["output_path"]
    head_lines = head["content"].split("\n\n")[0].splitlines()
    assert head_lines == [str(i) for i in range(1, 1501)]  # max_lines 3000, bounded by the policy's 1500
    assert read["content"] == "4999\tlog line 4999\n5000\tlog line 5000"
    assert read["details"]["file_sha256"] == hashlib.sha256(log).hexdigest()
    assert listed["content"].endswith("\n[5 more entries not shown; use glob to narrow]")
    assert len(listed["content"].splitlines()) == 1001 and listed["details"]["entries"] == 1005
    assert r.summary["status"] == "success"
