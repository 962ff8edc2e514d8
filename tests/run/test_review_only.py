"""A review-only run's narrowing (runner/run/review_only.py, issue 43 item 4), pure: the tools it offers are the
built-in read tools, and its agent's restriction lets a call through only when it reads inside the checkout or the
run's own directory — whatever the policy would allow (`--policy full-access` reads /etc)."""

from __future__ import annotations

from pathlib import Path

from runner.policy.model import Target
from runner.run.options import RunOptions
from runner.run.review_only import ReviewOnly, refusal, review_tools


def test_the_read_tools_every_run_has_and_no_other():
    assert review_tools(None) == ("read", "list", "glob", "grep", "memory_search", "todo")
    assert review_tools(("grep", "bash", "skill", "task", "web_search", "mcp__s__t")) == ("grep", "skill")


def test_only_reads_inside_the_checkout_or_the_runs_own_directory_pass():
    only = ReviewOnly(Path("/tmp/runs/r1"))
    assert only.refuses("read", [Target("read", "workspace:src/fetch.py")]) is None
    assert only.refuses("read", [Target("read", "fs:/tmp/runs/r1/outputs/spill.txt")]) is None
    for tool, target in (("read", Target("read", "fs:/etc/passwd")), ("read", Target("read", "fs:/tmp/runs/r10/x")),
                         ("bash", Target("bash", "shell:ls")), ("web_fetch", Target("web_fetch", "https://x.example")),
                         ("read", Target("network", "net:x.example:443"))):
        assert only.refuses(tool, [Target("read", "workspace:a"), target]) is not None, target
    assert only.fields() == {"restriction": "--fork-review"}


def test_the_refusal_names_every_option_that_would_widen_it():
    assert refusal(RunOptions("-", fork_review=True, tools="read,grep"), {}) is None
    why = refusal(RunOptions("-", land="pr", approvals=["read:**"], mcp_configs=["m.json"], tools="read,move"),
                  {"AGENT_RUN_MCP_CONFIG": "x.json"})
    assert why is not None and all(f in why for f in ("--land", "--approve", "--mcp-config", "AGENT_RUN_MCP_CONFIG",
                                                      "--tools naming move"))
