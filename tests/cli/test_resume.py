"""`resume --help` and `fork --help` say the defaults a continued run really has (the recorded run's model,
policy, runs directory and MCP configs) and do not list the options a continued run refuses."""

from __future__ import annotations

import re

from tests.fakes.openai_server import reply

REFUSED = ("--instructions", "--append-system-prompt", "--tools")


def _option_lines(help_text: str) -> dict[str, str]:
    """Each option's help, joined across its wrapped lines, by its first flag."""
    out: dict[str, str] = {}
    flag = None
    for line in help_text.split("Options:", 1)[1].splitlines():
        if m := re.match(r"\s{2}(-\w, )?(--[\w-]+)", line):
            flag = m.group(2)
            out[flag] = line
        elif flag:
            out[flag] += " " + line.strip()
    return {k: re.sub(r"\s+", " ", v) for k, v in out.items()}


def test_resume_and_fork_help_show_the_recorded_runs_defaults(fake, workspace, agent_run):
    for command in ("resume", "fork"):
        r = agent_run(command, "--help")
        assert r.code == 0, r.stderr
        options = _option_lines(r.stdout)
        assert not [flag for flag in REFUSED if flag in options], r.stdout
        assert "[default: the run's model]" in options["--model"]
        assert "[default: the run's policy snapshot]" in options["--policy"]
        assert "[default: default]" not in options["--policy"]
        assert "current directory]" in options["--workspace"] and "the run directory sits in" in options["--workspace"]
        assert "[default: the directory RUN_DIR is in" in options["--runs-dir"]
        assert "[default: the files the run was given" in options["--mcp-config"]
    # `run` keeps its own defaults and options.
    run_options = _option_lines(agent_run("run", "--help").stdout)
    assert "[default: default]" in run_options["--policy"] and "--instructions" in run_options


def test_a_resume_takes_the_runs_model_and_still_refuses_what_help_leaves_out(fake, workspace, agent_run):
    fake.add(reply("first"), reply("second"))
    first = agent_run("--model", "small-model", "task.md")
    assert first.code == 0, first.stderr
    again = agent_run("resume", str(first.run_dir), "go on")
    assert again.code == 0, again.stderr
    assert [q["model"] for q in fake.requests] == ["small-model", "small-model"]  # the default the help names
    assert again.summary["model"] == "small-model" and again.of_type("run_started")[0]["model"] == "small-model"
    for flag in (["--instructions", "task.md"], ["--append-system-prompt", "x"]):
        refused = agent_run("resume", str(first.run_dir), *flag)
        assert refused.code == 2 and "apply to a new run only" in refused.stderr, refused.stderr
        assert refused.new_dirs == []
    refused = agent_run("fork", str(first.run_dir), "--tools", "read")
    assert refused.code == 2 and "sealed" in refused.stderr and refused.new_dirs == []
