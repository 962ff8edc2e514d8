"""Every option a run is given, declared once: one row per option of `agent-run run`, saying everything the
rest of the runner needs to know about it. Read from these rows: the click options of `run`, `resume`, `fork`,
`github respond`, `batch` and `replay` (runner/cli/flags.py), `options_from` (runner/cli/run.py), the rerun
command a denial prints and the workflow's protected input files (runner/run/options.py), batch's forwarding,
and docs/ci.md's inputs table (runner/cli/docgen.py); the GitHub Action's `args` guard (action.yml, which
cannot import it) is held to them by a test.

Adding a run option is one row here plus its use: a `RunOptions` field (`goes=Goes.RUN`) or a `Settings`
field (`goes=Goes.SETTINGS`, runner/engine/settings.py) and the code that reads it. tests/run/test_option_table.py
checks that every row names such a field (and its policy key, its action input); tests/cli/test_option_table.py
that an added row reaches `run --help`, the rerun command and batch.

The table sits in run/ (not cli/) because the rerun words and the protected inputs are derived from it while a
run is prepared; it imports nothing of the runner, so any floor above may read it. `Settings` (engine/, below)
does not read it: a row names its field, and the tests hold the two together.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum, IntEnum


class Goes(Enum):
    """Where a given value goes."""

    SETTINGS = "settings"  # RunOptions.cli_settings, a layer of `Settings` (above the environment)
    RUN = "run"  # the `RunOptions` field of the same name
    COMMAND = "command"  # the command itself reads it (how it prints, where it reports)


class Rerun(IntEnum):
    """How the rerun command repeats an option; the command says them in this order, each kind in the
    table's order. The words are in events (the model reads them in a denial): their order is fixed."""

    POLICY = 0  # --policy, always: the policy in effect, a shipped one by name
    VALUE = 1  # the run's own value, when given
    SETTING = 2  # a budget, when given (not the model or its sampling: a replayed run must see the same text)
    PATH = 3  # each path, relative to the workspace root
    SWITCH = 4  # the flag alone, when on
    TEXT = 5  # each text as given
    APPROVAL = 6  # each approval, last: a denial adds its own after them


@dataclass(frozen=True)
class Value:
    """What a flag's value may be: `kind` text, int, float, choice, switch (a flag alone) or bool (a
    `--x/--no-x` pair); ints and floats within `low`..`high` (`low_open`: above `low`)."""

    kind: str = "text"
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    choices: tuple[str, ...] = ()


TEXT = Value()
SWITCH = Value("switch")
BOOL = Value("bool")


def integer(low: int | None = None, high: int | None = None) -> Value:
    return Value("int", low, high)


def decimal(low: float, high: float | None = None, *, above: bool = False) -> Value:
    return Value("float", low, high, low_open=above)


def choice(*names: str) -> Value:
    return Value("choice", choices=names)


ACTION_OWN = "(the action's own)"  # `action` of a flag the GitHub Action sets itself, from no input


@dataclass(frozen=True)
class Option:
    """One option of `agent-run run`. A row is keyed by (command, flag): `on` gives its help on another
    command that takes it (None: no help there)."""

    flag: str
    name: str  # the click parameter, and the RunOptions or Settings field it sets
    help: str | None = None
    value: Value = TEXT
    metavar: str | None = None
    many: bool = False  # repeatable: a list, in the order given
    short: str | None = None  # "-q"
    off: str | None = None  # the off half of a bool pair: "--no-stream"
    goes: Goes = Goes.RUN
    env: str | None = None  # the environment variable that sets it too
    cli_env: bool = False  # the command reads `env` itself when the flag is not given (else Settings or the run)
    default: str | None = None  # what the command takes when neither the flag nor `env` gives it
    policy: str | None = None  # the policy key that sets it too (below the environment)
    action: str | None = None  # the GitHub Action's input that sets it; the action refuses it in `args`
    rerun: Rerun | None = None  # how the rerun command repeats it; None: it does not
    # The printed resume repeats it (each path relative to the workspace root): a trusted directory a run directory
    # cannot grant, which a resume reads only from the command line (runner/sessions/inputs.py).
    resumed: bool = False
    batch: bool = False  # batch takes it and passes it on to every task
    protect: int | None = None  # names trusted input files the agent may not edit: their place among them
    shared: bool = True  # resume, fork and github respond take it too
    continued: bool = True  # resume and fork apply it; False: hidden there, and refused
    run: bool = True  # `run` takes it; False: only the commands that name it (`github respond --fork-review`)
    on: Mapping[str, str | None] = field(default_factory=dict)

    def help_on(self, command: str) -> str | None:
        return self.on.get(command, self.help)

    @property
    def flags(self) -> str:
        """The flag as an error message names it: `--stream/--no-stream`."""
        return f"{self.flag}/{self.off}" if self.off else self.flag


CONTINUED = ("resume", "fork")
_POLICY_ON = ("Decide under this policy file, or shipped name, instead of the run's own (required for a killed run "
              "whose snapshot cannot be vouched for). [default: the run's policy snapshot]")
_WORKSPACE_ON = ("Directory to go on in. [default: the workspace the run directory sits in, else the one the run "
                 "recorded, else the current directory]")
_MODEL_ON = "Model name, or replay:RUN_DIR to replay a recorded run offline. [default: the run's model]"
_MCP_ON = ("MCP servers as tools, as `run --mcp-config` (repeatable). [default: the files the run was given, "
           "checked unchanged]")
# runner.policy.load.shipped_names(), spelled out: that module imports jsonschema, too much for `--help`.
# tests/test_generated_docs.py checks that the two agree.
SHIPPED_POLICIES = ("ci", "default", "full-access", "strict")

# `run`'s options, in the order `run --help` lists them.
OPTIONS: tuple[Option, ...] = (
    Option("--policy", "policy", f"Policy file, or a shipped name ({', '.join(SHIPPED_POLICIES)}). [default: default]",
           metavar="PATH|NAME", env="AGENT_RUN_POLICY", action="policy", rerun=Rerun.POLICY, batch=True,
           on={**dict.fromkeys(CONTINUED, _POLICY_ON), "batch": None,
               "replay": "Decide under this policy instead of the run's snapshot (required for a run that was never "
                         "sealed)."}),
    Option("--workspace", "workspace", "Directory the agent works in. [default: current directory]", metavar="DIR",
           action=ACTION_OWN, batch=True,
           on={**dict.fromkeys(CONTINUED, _WORKSPACE_ON), "batch": None,
               "replay": "Where to run them. [default: the workspace the run directory sits in, else the recorded "
                         "one]"}),
    Option("--runs-dir", "runs_dir", "Where run directories go. [default: WORKSPACE/.agent-run/runs]", metavar="DIR",
           action=ACTION_OWN, batch=True,
           on={"resume": "Where the new run directory goes, and where --last looks. [default: the directory RUN_DIR "
                         "is in; with --last, WORKSPACE/.agent-run/runs]",
               "fork": "Where the new run directory goes. [default: the directory RUN_DIR is in]",
               "batch": "As `run --runs-dir`. [default: WORKSPACE/.agent-run/runs]"}),
    Option("--model", "model", "Model name, or replay:RUN_DIR to replay a recorded run offline.", metavar="NAME",
           goes=Goes.SETTINGS, env="AGENT_RUN_MODEL", action="model", batch=True,
           on={**dict.fromkeys(CONTINUED, _MODEL_ON), "batch": None,
               "replay": "Model for --continue. [default: the recorded run's]"}),
    Option("--fallback-model", "fallback_models",
           "When the model's server stays down (retries exhausted on a 5xx, 429, timeout or dropped connection; not "
           "on 400/401/403/404), go on with this model on the same endpoint (repeatable, tried in order; also "
           "AGENT_RUN_FALLBACK_MODELS, comma-separated).",
           metavar="NAME", many=True, goes=Goes.SETTINGS, env="AGENT_RUN_FALLBACK_MODELS"),
    Option("--max-turns", "max_turns", "Stop after N model turns (exit 5).", integer(1), goes=Goes.SETTINGS,
           env="AGENT_RUN_MAX_TURNS", policy="budget.maxTurns", action="max-turns", rerun=Rerun.SETTING, batch=True,
           on={"batch": None, "replay": "Turn budget for --continue (exit 5)."}),
    Option("--timeout", "timeout", "Whole-run wall-clock limit (exit 5).", decimal(0, above=True), metavar="SECONDS",
           goes=Goes.SETTINGS, env="AGENT_RUN_TIMEOUT", policy="budget.timeoutSeconds", action="timeout",
           rerun=Rerun.SETTING, batch=True,
           on={"batch": None, "replay": "Whole-run wall-clock limit, the approved calls included (exit 5).",
               "respond": "Wall-clock limit of the whole command (exit 5): GitHub's requests before the run come "
                          "out of it, the run gets what is left."}),
    Option("--max-tokens", "max_tokens", "Prompt + completion token budget (exit 5).", integer(1),
           goes=Goes.SETTINGS, env="AGENT_RUN_MAX_TOKENS", policy="budget.maxTokens", rerun=Rerun.SETTING,
           batch=True,
           on={"batch": "As `run --max-tokens` (each task's own budget).",
               "replay": "Prompt + completion token budget for --continue (exit 5)."}),
    Option("--max-cost-usd", "max_cost_usd", "Cost budget from usage and the model's price (exit 5).",
           decimal(0, above=True), metavar="USD", goes=Goes.SETTINGS, env="AGENT_RUN_MAX_COST_USD",
           policy="budget.maxCostUsd", action="max-cost-usd", rerun=Rerun.SETTING, batch=True,
           on={"batch": None, "replay": "Cost budget for --continue, from usage and the model's price (exit 5)."}),
    # runner/sessions/auto_resume.py; `run` only: a resume it starts is its own, within the first run's budgets.
    Option("--auto-resume", "auto_resume",
           "When the run ends on a transient cause (summary `cause` provider_down: the model's server down after the "
           "retries and every --fallback-model; protocol: a model response that broke the protocol), resume it "
           "after a backoff, up to N times: each resume a new run directory in the same lineage, the chain within "
           "the first run's --timeout, --max-turns, --max-tokens and --max-cost-usd. Never after a denial, a loop "
           "guard, a budget or a failed check. [default: 0]", integer(0), metavar="N", env="AGENT_RUN_AUTO_RESUME",
           cli_env=True, action="auto-resume", shared=False, continued=False),
    Option("--context-window", "context_window",
           "The model's context window, when genai-prices' model database does not know it.", integer(1),
           metavar="TOKENS", goes=Goes.SETTINGS, env="AGENT_RUN_CONTEXT_WINDOW", policy="compaction.contextWindow"),
    Option("--compaction", "compaction",
           "Summarize the conversation (stage 3) when the context fills; --no-compaction: never ask for a summary "
           "(stages 1-2 still trim and clear results; a run that would pass the window ends exit 5). [default: on]",
           BOOL, off="--no-compaction", goes=Goes.SETTINGS, env="AGENT_RUN_COMPACTION", policy="compaction.enabled"),
    Option("--compaction-max-messages", "compaction_max_messages",
           "Also summarize when the conversation holds more than N messages, whatever its size.", integer(4),
           metavar="N", goes=Goes.SETTINGS, env="AGENT_RUN_COMPACTION_MAX_MESSAGES", policy="compaction.maxMessages"),
    Option("--compaction-emergency-at", "compaction_emergency_at",
           "A summary due by the context's share (summarizeAt, 70%) waits while the provider's prompt cache is warm, "
           "until a request would reach this share of the usable window. [default: 0.95]", decimal(0, 1, above=True),
           metavar="SHARE", goes=Goes.SETTINGS, env="AGENT_RUN_COMPACTION_EMERGENCY_AT",
           policy="compaction.emergencyAt"),
    Option("--compaction-cache-ttl", "compaction_cache_ttl_s",
           "The prompt cache counts as warm this long after a response that reported cached prompt tokens (0: never "
           "wait for it). [default: 300]", decimal(0), metavar="SECONDS", goes=Goes.SETTINGS,
           env="AGENT_RUN_COMPACTION_CACHE_TTL_S", policy="compaction.cacheTtlSeconds"),
    Option("--tokenizer", "tokenizer",
           "Count the context in this tokenizer's tokens instead of characters / 4: tiktoken:PATH, a .tiktoken file "
           "(needs the `tokenizer` extra).", metavar="tiktoken:PATH", goes=Goes.SETTINGS, env="AGENT_RUN_TOKENIZER"),
    Option("--temperature", "temperature", "Sampling temperature (sent if set).", decimal(0, 2), goes=Goes.SETTINGS,
           env="AGENT_RUN_TEMPERATURE", policy="model.temperature"),
    Option("--top-p", "top_p", "Nucleus sampling (sent if set).", decimal(0, 1, above=True), goes=Goes.SETTINGS,
           env="AGENT_RUN_TOP_P", policy="model.topP"),
    Option("--max-output-tokens", "max_output_tokens",
           "Output cap per model request (--max-tokens is the whole run's budget).", integer(1), metavar="N",
           goes=Goes.SETTINGS, env="AGENT_RUN_MAX_OUTPUT_TOKENS", policy="model.maxOutputTokens"),
    Option("--seed", "seed", "Sampling seed, where the endpoint supports one.", integer(), goes=Goes.SETTINGS,
           env="AGENT_RUN_SEED", policy="model.seed"),
    Option("--reasoning-effort", "reasoning_effort", "For reasoning models, where the endpoint supports it.",
           choice("minimal", "low", "medium", "high"), goes=Goes.SETTINGS, env="AGENT_RUN_REASONING_EFFORT",
           policy="model.reasoningEffort"),
    Option("--text-tool-calls", "text_tool_calls",
           "A tool call the model wrote as text, run when it is the reply's one call and nothing follows it. auto: "
           "until the run receives a structured tool_calls reply, in the forms small models write (<tool_call>, a "
           "reply that is only one JSON call, bare or fenced, functions.NAME: and its JSON), and never one a tool's "
           "output showed the model; on: every form, a fenced call after prose too (a server that only writes calls "
           "as text); off: such text is an answer. [default: auto]",
           choice("auto", "on", "off"), goes=Goes.SETTINGS, env="AGENT_RUN_TEXT_TOOL_CALLS", rerun=Rerun.SETTING),
    Option("--check-attempts", "check_attempts",
           "When the task's check fails after the model's answer, its output goes back to the model and the run goes "
           "on, up to N checks in all, within every budget; 1: the first check decides (the task's front matter "
           "`check_attempts` may only lower it). Also AGENT_RUN_CHECK_ATTEMPTS. [default: 3]", integer(1),
           metavar="N", goes=Goes.SETTINGS, env="AGENT_RUN_CHECK_ATTEMPTS", rerun=Rerun.SETTING, batch=True,
           on={"batch": "As `run --check-attempts`."}),
    Option("--answer-nudges", "answer_nudges",
           "A final answer that claims a change no file shows, hands the user the work, or only announces what it "
           "will do is sent back once per kind, asking for a tool call, at most N times a run (docs/guards.md); 0: "
           "never. Also AGENT_RUN_ANSWER_NUDGES. [default: 2]", integer(0), metavar="N", goes=Goes.SETTINGS,
           env="AGENT_RUN_ANSWER_NUDGES", rerun=Rerun.SETTING, batch=True,
           on={"batch": "As `run --answer-nudges`."}),
    Option("--parallel-calls", "parallel_calls",
           "Read-only calls of one model reply (read, grep, glob, list, memory_search, web_fetch, skill, MCP tools "
           "the MCP config marks readOnlyTools) run N at once; 1: one by one. Also AGENT_RUN_PARALLEL_CALLS. "
           "[default: 4]", integer(1, 64), metavar="N", goes=Goes.SETTINGS, env="AGENT_RUN_PARALLEL_CALLS"),
    Option("--parallel-agents", "parallel_agents",
           "task calls of one model reply run N child agents at once (they share the workspace and the run's "
           "budgets); 1: one by one. Also AGENT_RUN_PARALLEL_AGENTS. [default: 4]", integer(1, 64), metavar="N",
           goes=Goes.SETTINGS, env="AGENT_RUN_PARALLEL_AGENTS"),
    Option("--approve", "approvals", "Allow this for this run only, after all policy rules (repeatable).",
           metavar="DOMAIN:PATTERN", many=True, rerun=Rerun.APPROVAL, batch=True,
           on={"batch": "As `run --approve`, for every task (repeatable)."}),
    Option("--mode", "mode", "Override the policy's mode (full_access: ask becomes allow; deny stays deny).",
           choice("agent", "full_access"), rerun=Rerun.VALUE, batch=True, on={"batch": "As `run --mode`."}),
    Option("--sandbox", "sandbox",
           "OS sandbox for every command: refuse to run without it, use it when possible, or none. [default: the "
           "policy's sandbox.mode, else auto]", choice("required", "auto", "off"), env="AGENT_RUN_SANDBOX",
           policy="sandbox.mode", action="sandbox",
           rerun=Rerun.VALUE, batch=True,
           on={"batch": "As `run --sandbox`.",
               "replay": "As `run --sandbox` (default: the recorded policy's sandbox.mode, else auto)."}),
    Option("--env-file", "env_files",
           "Read settings (AGENT_RUN_*, OPENAI_*) from this dotenv file, below the environment (repeatable; a later "
           "file wins). A workspace .env is never read by itself.", metavar="PATH", many=True, rerun=Rerun.PATH,
           batch=True, protect=5, on={"batch": "As `run --env-file` (repeatable)."}),
    Option("--system-prompt", "system_prompt",
           "Replace agent-run's own text in the system prompt with this file's (trusted); the runner's tool and "
           "policy contract and the framing of repository content stay.", metavar="FILE", rerun=Rerun.PATH,
           protect=7, continued=False),
    Option("--instructions", "instructions",
           "Add this file's text to the system prompt as the workflow's instructions (repeatable).", metavar="FILE",
           many=True, rerun=Rerun.PATH, protect=2, continued=False),
    Option("--append-system-prompt", "append_system_prompt",
           "Add TEXT to the system prompt (repeatable). The workspace's AGENTS.md is read by itself.", metavar="TEXT",
           many=True, rerun=Rerun.TEXT, continued=False),
    Option("--no-project-instructions", "no_project_instructions",
           "Leave the workspace's AGENTS.md (or CLAUDE.md) chain out of the system prompt; --instructions and "
           "--append-system-prompt still apply. Also AGENT_RUN_NO_PROJECT_INSTRUCTIONS.", SWITCH, goes=Goes.SETTINGS,
           env="AGENT_RUN_NO_PROJECT_INSTRUCTIONS", batch=True, continued=False,
           on={"batch": "As `run --no-project-instructions`, for every task."}),
    Option("--skills", "skills",
           "Skills from DIR/*/SKILL.md (repeatable), besides the workspace's .agents/skills and .claude/skills.",
           metavar="DIR", many=True, rerun=Rerun.PATH, protect=3, resumed=True),
    Option("--agents", "agents",
           "Subagent profiles from DIR/*.md (repeatable; trusted), before the workspace's .agents/agents and "
           ".claude/agents.", metavar="DIR", many=True, rerun=Rerun.PATH, protect=4, resumed=True),
    # The variable is a list of files (os.pathsep between them), protected after the flag's.
    Option("--mcp-config", "mcp_configs",
           "MCP servers as tools, from a {\"mcpServers\": …} file (repeatable; also AGENT_RUN_MCP_CONFIG). A "
           "workspace .mcp.json is never read by itself.", metavar="FILE", many=True, env="AGENT_RUN_MCP_CONFIG",
           action="mcp-config", rerun=Rerun.PATH, batch=True, protect=1,
           on={**dict.fromkeys(CONTINUED, _MCP_ON), "batch": "As `run --mcp-config`, for every task (repeatable).",
               "replay": "MCP servers, as `run --mcp-config`. [default: the files the run was given]"}),
    Option("--shared-workspace", "shared_workspace",
           "Run even while another run uses this workspace (each then sees the other's changes).", SWITCH,
           on={"batch": "Run parallel tasks in the workspace itself, sharing it (each sees the others' changes); "
                        "needed for -j above 1 outside git."}),
    Option("--output-format", "output_format",
           "stdout: the final answer, the summary JSON, or every event as a JSON line as it happens.",
           choice("text", "json", "stream-json"), goes=Goes.COMMAND, env="AGENT_RUN_OUTPUT_FORMAT", cli_env=True,
           default="text", action=ACTION_OWN,
           on={"replay": "stdout: the final answer, the summary JSON, or every event as a JSON line as it happens. "
                         "[default: text]"}),
    Option("--junit", "junit", "Also write a JUnit XML report (one testcase).", metavar="PATH", goes=Goes.COMMAND,
           action="junit"),
    Option("--stream", "stream", "Stream model responses.", BOOL, off="--no-stream", goes=Goes.SETTINGS,
           env="AGENT_RUN_STREAM", on={"replay": "Stream model responses (--continue)."}),
    Option("--quiet", "quiet", "No progress on stderr.", SWITCH, short="-q", goes=Goes.COMMAND, on={"replay": None}),
    Option("--verbose", "verbose", "More progress on stderr.", SWITCH, short="-v", goes=Goes.COMMAND),
    # `run`'s own from here (resume and fork send the recorded ones; github respond takes them after its own).
    Option("--output-schema", "output_schema",
           "The final answer must be a JSON value valid against this JSON Schema (repaired up to twice, else exit "
           "1); it is printed on stdout, in summary.json `output` and output.json.", metavar="FILE",
           action="output-schema", rerun=Rerun.PATH, protect=6, shared=False,
           on={"respond": "The final answer must be a JSON value valid against this JSON Schema (as for `run`)."}),
    Option("--findings", "findings",
           "The final answer is review findings (a built-in schema: summary, findings with path, line, severity, "
           "title, message, rule, suggestion): findings.json, findings.sarif (SARIF 2.1.0) and job annotations. Not "
           "with --output-schema.", SWITCH, rerun=Rerun.SWITCH, shared=False,
           on={"respond": "The final answer is review findings (as for `run`): findings.json, findings.sarif, "
                          "annotations. Not with --output-schema."}),
    Option("--sarif-denials", "sarif_denials",
           "Also write the run's denials as SARIF results in findings.sarif (for a gate on them).", SWITCH,
           rerun=Rerun.SWITCH, shared=False,
           on={"respond": "Also write the run's denials as SARIF results in findings.sarif (as for `run`)."}),
    Option("--isolate", "isolate",
           "Run in a private copy of the (git) workspace under WORKSPACE/.agent-run/worktrees/.",
           choice("worktree"), rerun=Rerun.VALUE, shared=False,
           on={"batch": "Each task in its own worktree even with -j 1 (with -j above 1 this is the default)."}),
    Option("--tools", "tools",
           "Offer only these tools, comma-separated: built-in names (read,edit,bash,task,skill,…) or "
           "mcp__SERVER__TOOL; the policy still decides each call (also AGENT_RUN_TOOLS). [default: all]",
           metavar="LIST", env="AGENT_RUN_TOOLS", cli_env=True, rerun=Rerun.VALUE, batch=True, shared=False,
           continued=False,
           on={"batch": "As `run --tools`, for every task.",
               "respond": "Offer only these tools, comma-separated (as for `run`; also AGENT_RUN_TOOLS). "
                          "[default: all]"}),
    Option("--preset", "preset",
           "Settings for a kind of model. small (a small local model): offer only read,list,grep,edit,bash (unless "
           "--tools), add an act-don't-describe rule to the runner's contract, show the task's check: command to the "
           "model, read the files the task names for it first, allow 4 answer nudges (also AGENT_RUN_PRESET). "
           "[default: none]",
           choice("small"), env="AGENT_RUN_PRESET", cli_env=True, rerun=Rerun.VALUE, batch=True, shared=False,
           continued=False,
           on={"batch": "As `run --preset`, for every task.",
               "respond": "As `run --preset` (also AGENT_RUN_PRESET)."}),
    Option("--fork-review", "fork_review",
           "Review-only: read tools on the checkout alone, whatever the policy says (no bash, no MCP, no network, "
           "no subagents, no landing). Answers a fork's pull request (pull_request_target, a comment on it) on the "
           "base branch's checkout, the fork's diff read through the API; only a writer's mention or label asks. "
           "Not with --land, --mcp-config, --approve, --mode full_access, --agents, or --tools naming more than "
           "read tools.", SWITCH, action="fork-review", shared=False, run=False),
    # Landing the run's change (runner/run/land.py, docs/ci.md "Landing the change"): resume and fork keep the
    # recorded values and refuse others; batch passes them on (branch and pr only with each task in a worktree).
    Option("--land", "land",
           "After a successful run that changed the workspace, the runner lands the change: commit (one commit on "
           "the current branch, no push), branch (the commit pushed to agent-run/<task> or --land-branch, with "
           "GITHUB_TOKEN), pr (branch, then a pull request). [default: none]",
           choice("none", "commit", "branch", "pr"), env="AGENT_RUN_LAND", cli_env=True, action="land",
           rerun=Rerun.VALUE, batch=True),
    Option("--land-branch", "land_branch", "The branch --land branch|pr pushes to. [default: agent-run/<slug of the "
           "task path>]", metavar="NAME", rerun=Rerun.VALUE, batch=True),
    Option("--land-base", "land_base", "The branch a pull request of --land pr is opened against (required on a "
           "detached HEAD). [default: the branch the workspace was on]", metavar="BRANCH", action="land-base",
           rerun=Rerun.VALUE, batch=True),
    Option("--land-remote", "land_remote", "Push to this URL (https; http only for 127.0.0.1), never a remote's name. "
           "[default: $GITHUB_SERVER_URL/$GITHUB_REPOSITORY]", metavar="URL", rerun=Rerun.VALUE, batch=True),
    Option("--land-ready", "land_ready", "Open the pull request ready for review, not as a draft.", SWITCH,
           rerun=Rerun.SWITCH, batch=True),
    Option("--land-allow-workflows", "land_allow_workflows",
           "Land a change to .github/workflows/ too (refused otherwise; the job token needs the workflows "
           "permission).", SWITCH, rerun=Rerun.SWITCH, batch=True),
    Option("--commit-author", "commit_author", "Author and committer of the landed commit. [default: agent-run "
           "<agent-run@users.noreply.github.com>]", metavar="'NAME <EMAIL>'", action="commit-author",
           rerun=Rerun.VALUE, batch=True),
)


def row(flag: str, table: Sequence[Option] = OPTIONS) -> Option:
    return next(o for o in table if o.flag == flag)


def action_owned(table: Sequence[Option] = OPTIONS) -> tuple[list[str], list[str]]:
    """The flags the GitHub Action refuses in its `args` input (action.yml's INPUTS and FIXED): those an
    input sets, and those it sets itself, each in the table's order."""
    return ([o.flag for o in table if o.action not in (None, ACTION_OWN)],
            [o.flag for o in table if o.action == ACTION_OWN])
