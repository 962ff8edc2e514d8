"""`agent-run run`: run TASK headless and exit with a code a pipeline can act on."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import click

from runner.cli.output import finish, with_github
from runner.run.assemble import execute
from runner.run.options import RunOptions

# runner.policy.load.shipped_names(), spelled out: that module imports jsonschema, too much for `--help`.
# tests/test_generated_docs.py checks that the two agree.
SHIPPED_POLICIES = ("ci", "default", "full-access", "strict")


_OPTIONS = [
    click.option("--policy", metavar="PATH|NAME",
                 help=f"Policy file, or a shipped name ({', '.join(SHIPPED_POLICIES)}). [default: default]"),
    click.option("--workspace", metavar="DIR", help="Directory the agent works in. [default: current directory]"),
    click.option("--runs-dir", metavar="DIR", help="Where run directories go. [default: WORKSPACE/.agent-run/runs]"),
    click.option("--model", metavar="NAME", help="Model name, or replay:RUN_DIR to replay a recorded run offline."),
    click.option("--fallback-model", "fallback_models", multiple=True, metavar="NAME",
                 help="When the model's server stays down (retries exhausted on a 5xx, 429, timeout or dropped "
                      "connection; not on 400/401/403/404), go on with this model on the same endpoint "
                      "(repeatable, tried in order; also AGENT_RUN_FALLBACK_MODELS, comma-separated)."),
    click.option("--max-turns", type=click.IntRange(min=1), help="Stop after N model turns (exit 5)."),
    click.option("--timeout", type=click.FloatRange(min=0, min_open=True), metavar="SECONDS",
                 help="Whole-run wall-clock limit (exit 5)."),
    click.option("--max-tokens", type=click.IntRange(min=1), help="Prompt + completion token budget (exit 5)."),
    click.option("--max-cost-usd", type=click.FloatRange(min=0, min_open=True), metavar="USD",
                 help="Cost budget from usage and the model's price (exit 5)."),
    click.option("--context-window", type=click.IntRange(min=1), metavar="TOKENS",
                 help="The model's context window, when genai-prices' model database does not know it."),
    click.option("--temperature", type=click.FloatRange(0, 2), help="Sampling temperature (sent if set)."),
    click.option("--top-p", type=click.FloatRange(0, 1, min_open=True), help="Nucleus sampling (sent if set)."),
    click.option("--max-output-tokens", type=click.IntRange(min=1), metavar="N",
                 help="Output cap per model request (--max-tokens is the whole run's budget)."),
    click.option("--seed", type=int, help="Sampling seed, where the endpoint supports one."),
    click.option("--reasoning-effort", type=click.Choice(["minimal", "low", "medium", "high"]),
                 help="For reasoning models, where the endpoint supports it."),
    click.option("--text-tool-calls", type=click.Choice(["auto", "off"]),
                 help="auto: run a tool call the model wrote as text (<tool_call>, fenced JSON, functions.NAME:) "
                      "when it is the reply's one call and nothing follows it; off: such text is an answer. "
                      "[default: auto]"),
    click.option("--parallel-calls", type=click.IntRange(1, 64), metavar="N",
                 help="Read-only calls of one model reply (read, grep, glob, list, memory_search, web_fetch, skill, "
                      "MCP tools the MCP config marks readOnlyTools) run N at once; 1: one by one. Also "
                      "AGENT_RUN_PARALLEL_CALLS. [default: 4]"),
    click.option("--parallel-agents", type=click.IntRange(1, 64), metavar="N",
                 help="task calls of one model reply run N child agents at once (they share the workspace and the "
                      "run's budgets); 1: one by one. Also AGENT_RUN_PARALLEL_AGENTS. [default: 4]"),
    click.option("--approve", "approvals", multiple=True, metavar="DOMAIN:PATTERN",
                 help="Allow this for this run only, after all policy rules (repeatable)."),
    click.option("--mode", type=click.Choice(["agent", "full_access"]),
                 help="Override the policy's mode (full_access: ask becomes allow; deny stays deny)."),
    click.option("--sandbox", type=click.Choice(["required", "auto", "off"]),
                 help="OS sandbox for every command: refuse to run without it, use it when possible, or none. "
                      "[default: the policy's sandbox.mode, else auto]"),
    click.option("--env-file", "env_files", multiple=True, metavar="PATH",
                 help="Read settings (AGENT_RUN_*, OPENAI_*) from this dotenv file, below the environment "
                      "(repeatable; a later file wins). A workspace .env is never read by itself."),
    click.option("--system-prompt", "system_prompt", metavar="FILE",
                 help="Replace agent-run's own text in the system prompt with this file's (trusted); the runner's "
                      "tool and policy contract and the framing of repository content stay."),
    click.option("--instructions", "instructions", multiple=True, metavar="FILE",
                 help="Add this file's text to the system prompt as the workflow's instructions (repeatable)."),
    click.option("--append-system-prompt", "append_system_prompt", multiple=True, metavar="TEXT",
                 help="Add TEXT to the system prompt (repeatable). The workspace's AGENTS.md is read by itself."),
    click.option("--skills", "skills", multiple=True, metavar="DIR",
                 help="Skills from DIR/*/SKILL.md (repeatable), besides the workspace's .agents/skills and "
                      ".claude/skills."),
    click.option("--agents", "agents", multiple=True, metavar="DIR",
                 help="Subagent profiles from DIR/*.md (repeatable; trusted), before the workspace's .agents/agents "
                      "and .claude/agents."),
    click.option("--mcp-config", "mcp_configs", multiple=True, metavar="FILE",
                 help="MCP servers as tools, from a {\"mcpServers\": …} file (repeatable; also AGENT_RUN_MCP_CONFIG). "
                      "A workspace .mcp.json is never read by itself."),
    click.option("--shared-workspace", is_flag=True,
                 help="Run even while another run uses this workspace (each then sees the other's changes)."),
    click.option("--output-format", type=click.Choice(["text", "json", "stream-json"]),
                 help="stdout: the final answer, the summary JSON, or every event as a JSON line as it happens."),
    click.option("--junit", metavar="PATH", help="Also write a JUnit XML report (one testcase)."),
    click.option("--stream/--no-stream", default=None, help="Stream model responses."),
    click.option("-q", "--quiet", is_flag=True, help="No progress on stderr."),
    click.option("-v", "--verbose", is_flag=True, help="More progress on stderr."),
]


def run_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """The options of `run`, shared by `resume` and `fork` (a continued run takes the same settings)."""
    for option in reversed(_OPTIONS):
        command = option(command)
    return command


def options_from(task: str, kw: dict[str, Any], **more: Any) -> tuple[RunOptions, str]:
    """RunOptions from the shared options' values (and the output format in effect)."""
    fmt = kw["output_format"] or os.environ.get("AGENT_RUN_OUTPUT_FORMAT") or "text"
    given = {"fallback_models": list(kw["fallback_models"]) or None}
    given |= {k: kw[k] for k in ("model", "max_turns", "timeout", "stream", "max_tokens", "max_cost_usd",
                                 "context_window", "temperature", "top_p", "max_output_tokens", "seed",
                                 "reasoning_effort", "text_tool_calls", "parallel_calls", "parallel_agents")}
    opts = RunOptions(task=task, policy=kw["policy"], workspace=kw["workspace"], runs_dir=kw["runs_dir"],
                      approvals=list(kw["approvals"]), mode=kw["mode"], sandbox=kw["sandbox"],
                      env_files=list(kw["env_files"]), cli_settings={k: v for k, v in given.items() if v is not None},
                      verbosity=0 if kw["quiet"] else (2 if kw["verbose"] else 1), stream_events=fmt == "stream-json",
                      shared_workspace=kw["shared_workspace"], mcp_configs=list(kw["mcp_configs"]),
                      instructions=list(kw["instructions"]), append_system_prompt=list(kw["append_system_prompt"]),
                      system_prompt=kw["system_prompt"],
                      skills=list(kw["skills"]), agents=list(kw["agents"]),
                      **more)
    return opts, fmt


@click.command("run")
@click.argument("task", metavar="TASK")
@run_options
@click.option("--output-schema", metavar="FILE",
              help="The final answer must be a JSON value valid against this JSON Schema (repaired up to twice, "
                   "else exit 1); it is printed on stdout, in summary.json `output` and output.json.")
@click.option("--findings", is_flag=True,
              help="The final answer is review findings (a built-in schema: summary, findings with path, line, "
                   "severity, title, message, rule, suggestion): findings.json, findings.sarif (SARIF 2.1.0) and "
                   "job annotations. Not with --output-schema.")
@click.option("--sarif-denials", is_flag=True,
              help="Also write the run's denials as SARIF results in findings.sarif (for a gate on them).")
@click.option("--isolate", type=click.Choice(["worktree"]),
              help="Run in a private copy of the (git) workspace under WORKSPACE/.agent-run/worktrees/.")
@click.option("--tools", metavar="LIST",
              help="Offer only these tools, comma-separated: built-in names (read,edit,bash,task,skill,…) or "
                   "mcp__SERVER__TOOL; the policy still decides each call (also AGENT_RUN_TOOLS). [default: all]")
def run(task: str, output_schema: str | None, findings: bool, sarif_denials: bool, isolate: str | None,
        tools: str | None, **kw: Any) -> None:
    """Run TASK (a Markdown file, or - for stdin) headless.

    \b
    Exit codes: 0 success, 1 failed, 2 usage/config error, 3 denied,
    4 doom_loop, 5 budget_exhausted, 6 model_error,
    130/143/129 interrupted (SIGINT/SIGTERM/SIGHUP).
    """
    opts, fmt = options_from(task, kw, isolate=isolate, output_schema=output_schema, findings=findings,
                             sarif_denials=sarif_denials,
                             tools=tools if tools is not None else os.environ.get("AGENT_RUN_TOOLS"))
    outcome, reporter = with_github(lambda: execute(opts))
    finish(outcome, reporter, fmt=fmt, quiet=kw["quiet"], junit=kw["junit"], task_file=task)
