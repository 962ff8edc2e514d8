"""A review-only run (`github respond --fork-review`): the agent reads the checkout and nothing else.

A fork's pull request is reviewed on the base branch's checkout with the fork's diff as data: whatever the policy
says, the run offers only the built-in tools of the `read` domain that every run has (read, list, glob, grep,
memory_search, todo; `skill` too when `--tools` names it), starts no MCP server, offers no `task` (no subagent), no
`web_fetch` or `web_search` (whatever AGENT_RUN_SEARCH_URL says) and no `bash`, and its agent is restricted
(`ReviewOnly`, an `AgentSpec` restriction checked before the policy) to reading inside the workspace and its own
run directory. What would widen that is refused before GitHub is asked (`refusal`, exit 2). The tools are decided
by their classes (`domain`, `offered`), never by a list of names here.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from runner.core.outcome import UsageError
from runner.policy.model import Target
from runner.run.options import RunOptions
from runner.run.toolset import parse_tools
from runner.subagents.builtin import BUILTIN

FLAG = "--fork-review"
READ = "read"  # the one domain a review-only run's calls may be decided in


def review_tools(names: tuple[str, ...] | None) -> tuple[str, ...]:
    """The tools a review-only run offers: the built-in read tools among `names` (None: those every run has)."""
    return tuple(cls.name for cls in BUILTIN if cls.domain == READ
                 and (cls.offered == "always" if names is None else cls.name in names))


def refusal(opts: RunOptions, environ: Mapping[str, str]) -> str | None:
    """Why `opts` cannot make a review-only run (the option that would let it write, run commands or reach the
    network), or None."""
    given = [flag for flag, on in (("--land", opts.land not in (None, "none")), ("--approve", bool(opts.approvals)),
                                   ("--mode full_access", opts.mode == "full_access"), ("--agents", bool(opts.agents)),
                                   ("--mcp-config", bool(opts.mcp_configs)),
                                   ("AGENT_RUN_MCP_CONFIG", bool(environ.get("AGENT_RUN_MCP_CONFIG")))) if on]
    try:
        names = parse_tools(opts.tools) or ()
    except UsageError:  # an unknown name: the run says which, as for any run
        names = ()
    wider = [n for n in names if n not in review_tools(names)]
    if wider:
        given.append(f"--tools naming {', '.join(wider)}")
    if not given:
        return None
    return (f"{FLAG} is a review-only run (read tools on the checkout, no commands, no network, no MCP, no "
            f"subagents, no landing): it cannot be used with {', '.join(given)}")


def keep_review_only(opts: RunOptions, started: Mapping[str, Any], environ: Mapping[str, str]) -> None:
    """A resume, fork or replay of a review-only run (its run_started `restriction`) is review-only too: the
    restriction is the run's, not a flag to repeat; what would widen it is UsageError (exit 2)."""
    if started.get("restriction") != FLAG:
        return
    opts.fork_review = True
    if (refused := refusal(opts, environ)) is not None:
        raise UsageError(f"the run continued was made with {refused.removeprefix(FLAG + ' ')}")


class ReviewOnly:
    """The restriction of a review-only run's agent: a call is let through only when every target is a read inside
    the workspace or the run's own directory (its spill files), whatever the policy would allow."""

    def __init__(self, run_dir: Path) -> None:
        self._own = f"fs:{run_dir.as_posix().rstrip('/')}/"

    def refuses(self, tool: str, targets: list[Target]) -> str | None:
        for target in targets:
            if target.domain != READ:
                return f"{FLAG}: a review-only run reads and does nothing else ({tool} decides {target.domain})"
            if not (target.target.startswith("workspace:") or target.target.startswith(self._own)):
                return f"{FLAG}: a review-only run reads the checkout only, not {target.target}"
        return None

    def fields(self) -> dict[str, Any]:
        return {"restriction": FLAG}
