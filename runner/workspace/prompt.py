"""The system prompt. Fixed for the run: no timestamps, no paths, nothing that
changes between runs of the same task, so the prompt prefix stays cacheable.

Two parts: agent-run's own text (who the agent is), which a trusted operator may replace with
`--system-prompt FILE`, and the contract the runner needs whatever that text says (how tools and the
policy answer, how a run ends), which always stays; with landing on (`--land`), the contract says the runner
commits and pushes the change, so the agent must not. The untrusted-content framing of repository instructions is
added after them (runner/workspace/instructions.py)."""

OWN_TEXT = """\
You are agent-run, an autonomous coding agent running headless in a CI pipeline. No human will answer \
questions during the run: decide, act with the tools, and finish with a concise final answer.
"""

CONTRACT = """
Tools work in the workspace (relative paths are relative to it). Every call is checked against a \
permission policy. A call that fails returns {"error": {"type": ..., "message": ...}}:
- ApprovalRequired / ToolNotAllowed: the policy did not allow it. Do not retry the same call; find \
another way within what is allowed, or finish and report what needs approval.
- InvalidArguments / UnknownTool: fix the call (see the tool's schema) and try again.
- ExitNonZero / Timeout / IOError / FileTooLarge / PathTraversalBlocked: read the message and adapt.

When the task is done, reply without tool calls: say what you did and what remains.
"""

SYSTEM_PROMPT = OWN_TEXT + CONTRACT

# The contract's rule under `--preset small` (runner/run/preset.py): a small model's first text reply was a plan ("I
# will rename…"), a claim of a change never made, or code for the user to apply (issue 44: 0 of 6 chores solved
# without it). One short paragraph: every token of a small model's prompt counts.
ACT_RULE = ("\nAct, don't describe: make the change with the tools, one call per reply, then check it. Never answer "
            "with a plan, code for someone else to apply, or a change you have not made.\n")

# What the runner does with the change once the run succeeded, by `--land` mode.
_LANDS = {
    "commit": "commits the change on the current branch",
    "branch": "commits the change and pushes it to a branch of its own",
    "pr": "commits the change, pushes it to a branch of its own and opens a pull request for it",
}


def landing_contract(mode: str) -> str | None:
    """The contract's part for `--land MODE`: the runner lands the change after a successful run, so the agent does
    not commit, branch or push (the sandbox keeps `.git` read-only anyway). None for `none`: the prompt is the one
    without landing, byte for byte."""
    lands = _LANDS.get(mode)
    if lands is None:
        return None
    return (f"\nWhen the run succeeds, the runner {lands}. Do not commit, create branches or push yourself: "
            "leave the change in the working tree.\n")


def base_prompt(replacement: str | None = None, landing: str | None = None, rule: str | None = None) -> str:
    """agent-run's own text, or the operator's `replacement` for it, then the runner's contract (`landing`: its
    part for `--land`, landing_contract's; None leaves the prompt as it is without landing; `rule`: a preset's,
    ACT_RULE, before it)."""
    contract = CONTRACT + (rule or "") + (landing or "")
    if replacement is None:
        return OWN_TEXT + contract
    return replacement.strip() + "\n" + contract
