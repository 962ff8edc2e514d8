"""The usable window as a hard limit: what must stay in the context, whether a whole result fits, and
the ending when nothing more can be freed.

A loaded skill and a subagent's answer enter the conversation whole (their tools' `context_class` "whole",
runner/context/prune.py `ToolKinds`): they are instructions and answers the model asked for, and half of one
is worse than none. One that cannot fit beside what must stay is refused with an error naming its
size, the room left and where its whole text is, never cut silently. A request the stages cannot bring
under the usable window is never sent: the run ends with exit 5, `budget.name` "context_window".
"""

from __future__ import annotations

from typing import Any

from runner.context.prune import frozen_end, recent_start, whole_calls
from runner.core.jsonutil import canonical
from runner.core.outcome import BudgetExhausted
from runner.tools.base import ToolError

# Room kept for the summary that would replace the rest when a whole result is admitted (tokens).
SUMMARY_ALLOWANCE = 512


def must_stay(manager: Any, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> int:
    """`manager`: a runner.context.manager.ContextManager (not imported: it imports this module).
    Tokens of what no stage removes: tools, system prompt, task, summaries, skills and answers kept whole,
    the recent turns; plus room for one more summary."""
    start = recent_start(messages, manager.config.recent_turns)
    kinds = manager.config.kinds
    frozen = frozen_end(messages, start, kinds)
    kept = [*messages[:frozen], *whole_calls(messages[frozen:start], kinds), *messages[start:]]
    return manager.tokens(kept, tools) + SUMMARY_ALLOWANCE


def does_not_fit(manager: Any, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                 content: str, tool: str) -> ToolError | None:
    """The error for a skill or an answer that cannot fit whole beside what must stay; None when it fits."""
    if manager.config.window is None:  # no window known: maxChars / 4 paces the stages, the server decides
        return None
    size = manager.estimator.tokens(canonical({"role": "tool", "tool_call_id": "call_0_0", "content": content}))
    taken = must_stay(manager, messages, tools)
    usable = manager.config.usable
    if taken + size <= usable:
        return None
    where = manager.spill(content) if manager.spill else None
    kept = f"its whole text is in {where}" if where else "its whole text is in the run's log (memory_search)"
    what = "the skill" if tool == "skill" else "the subagent's answer"
    advice = ("read the parts you need with `read` (offset, limit), or hand the work to a subagent (`task`), "
              "which starts with an empty context" if tool == "skill" else
              "read it in parts with `read` (offset, limit), or ask the subagent again for a shorter answer")
    return ToolError("ContextFull", f"{what} is ~{size:,} tokens and cannot fit whole: what must stay in the "
                     f"context (system prompt, task, summaries, loaded skills and answers, recent turns) takes "
                     f"~{taken:,} of the {usable:,} usable tokens. Nothing was cut; {kept}: {advice}",
                     tokens=size, room=max(usable - taken, 0), usable=usable, path=where)


def over_window(tokens: int, config: Any) -> BudgetExhausted:
    """The ending for a request that cannot be brought under the usable window (a known one: with none known,
    `compaction.maxChars` / 4 only paces the stages, and the server decides)."""
    window = f"the model's {config.window:,}-token context window ({config.usable:,} usable after the reply)"
    return BudgetExhausted(
        f"context window: the next request would be ~{tokens:,} tokens, over {window}, and nothing more can be "
        "cleared or summarized (what must stay: system prompt, task, summaries, loaded skills and answers, the "
        "recent turns)",
        budget={"name": "context_window", "limit": config.usable, "used": tokens, "window": config.window})
