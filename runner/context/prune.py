"""Pruning as pure functions over the message list.

Stage 1 (soft trim) cuts a large tool result *as it enters* the context, so no
sent prefix changes. Stage 2 (hard clear) replaces old tool results by a one-line
placeholder, all eligible ones at once (one prefix break per batch, not one per
turn); a placeholder is never changed again; in the same batch the large arguments of
protected calls already run (a `write`'s content) are kept by reference. Stage 3
(summarize) keeps the system prompt and the task, one summary message, and the recent
turns; protected calls in the summarized part are carried into the summary, large ones
by reference only. A loaded skill and a subagent's answer (`ToolKinds.whole`) are never
trimmed, cleared or summarized: a summary keeps their calls and results whole after it. Which tools are
protected, whole or kept by reference is their classes' `context_class` (runner/tools/base.py), read from the
agent's registry into a `ToolKinds`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from runner.core.jsonutil import short
from runner.tools.base import Tool

SUMMARY_MARKER = "[Session summary]"
CLEARED_MARKER = "[tool output cleared"
ERROR_KEPT = "[error kept: "  # after a cleared error's placeholder: the lesson, its first lines
LESSON_CHARS = 240
DECISION_LINES = 30  # a summary carries the last this many decisions and errors, one line each


@dataclass(frozen=True)
class ToolKinds:
    """Tool names by what pruning may do to their calls, from their classes' `context_class`."""

    # Instructions and answers the model asked for (a skill, a subagent's answer): half of one is worse than none.
    whole: frozenset[str] = frozenset()
    # Kept when old results are cleared, carried into a summary (the whole ones too).
    protected: frozenset[str] = frozenset()
    # Protected calls whose bulk is in their arguments, which the files they wrote now hold.
    by_reference: frozenset[str] = frozenset()

    @classmethod
    def of(cls, tools: Iterable[Tool | type[Tool]]) -> ToolKinds:
        """From tools (an agent's registry) or tool classes."""
        named = [(t.name, t.context_class) for t in tools]
        return cls(frozenset(n for n, c in named if c == "whole"), frozenset(n for n, c in named if c is not None),
                   frozenset(n for n, c in named if c == "by_reference"))


def soft_trim(content: str, keep_bytes: int, where: str | None) -> str:
    """Head and tail of a large result, whole lines, with a marker saying where the rest is."""
    data = content.encode("utf-8")
    if len(data) <= keep_bytes:
        return content
    half = keep_bytes // 2
    head = data[:half].decode("utf-8", "ignore")
    tail = data[-half:].decode("utf-8", "ignore")
    head = head[: head.rfind("\n") + 1] or head
    tail = tail[tail.find("\n") + 1:] or tail
    dropped = len(data) - len(head.encode()) - len(tail.encode())
    ref = f"full output: {where}" if where else "full output: use memory_search"
    return f"{head}[… {dropped} bytes trimmed as the context grew; {ref} …]\n{tail}"


def trim_results(messages: list[dict[str, Any]], start: int, keep_bytes: int, spill: Callable[[str], str | None] | None,
                 kinds: ToolKinds) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Stage 1 applied late, to results from index `start` on (the recent turns) when nothing else is left to
    free: each large one, except a skill's or an answer's, cut to head and tail, its whole text spilled first."""
    names = tool_names(messages)
    out: list[dict[str, Any]] = []
    counts: dict[str, int] = {}
    for i, m in enumerate(messages):
        content = str(m.get("content") or "")
        tool = names.get(m.get("tool_call_id", ""), ("?", ""))[0]
        if (i >= start and m.get("role") == "tool" and tool not in kinds.whole
                and len(content.encode()) > keep_bytes and "trimmed as the context grew" not in content):
            m = {**m, "content": soft_trim(content, keep_bytes, spill(content) if spill else None)}
            counts[tool] = counts.get(tool, 0) + 1
        out.append(m)
    return out, counts


def recent_start(messages: list[dict[str, Any]], recent_turns: int) -> int:
    """Index where the last `recent_turns` assistant turns (each with its tool results) begin."""
    starts = [i for i, m in enumerate(messages) if m.get("role") == "assistant"]
    if len(starts) <= recent_turns:
        return starts[0] if starts else len(messages)
    return starts[-recent_turns]


def tool_names(messages: list[dict[str, Any]]) -> dict[str, tuple[str, str]]:
    """call id -> (tool name, raw arguments), from the assistant messages."""
    out = {}
    for m in messages:
        for call in m.get("tool_calls") or []:
            out[call.get("id", "")] = (call["function"].get("name", ""), call["function"].get("arguments", ""))
    return out


def hard_clear(messages: list[dict[str, Any]], before: int, placeholder: Callable[[str, str, str, str], str],
               kinds: ToolKinds) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Replace tool results before index `before` (except protected tools and ones already cleared)."""
    names = tool_names(messages)
    out: list[dict[str, Any]] = []
    counts: dict[str, int] = {}
    for i, m in enumerate(messages):
        if (i < before and m.get("role") == "tool" and not str(m.get("content", "")).startswith(CLEARED_MARKER)):
            tool, args = names.get(m.get("tool_call_id", ""), ("?", ""))
            if tool not in kinds.protected:
                content = str(m.get("content", ""))
                cleared = placeholder(m.get("tool_call_id", ""), tool, args, content)
                if (kept := lesson(content)) is not None:  # an error keeps what it taught (level L1)
                    cleared = f"{cleared}\n{ERROR_KEPT}{kept}]"
                m = {**m, "content": cleared}
                counts[tool] = counts.get(tool, 0) + 1
        out.append(m)
    return out, counts


def lesson(content: str) -> str | None:
    """What an error result taught, `type: first lines of its message` (a ToolError's `{"error": {...}}`, a denial
    among them); of a cleared one, what its placeholder kept; None for any other result."""
    if ERROR_KEPT in content:
        return content.split(ERROR_KEPT, 1)[1].removesuffix("]")
    if not content.startswith('{"error"'):
        return None
    try:
        error = json.loads(content)["error"]
    except (ValueError, KeyError, TypeError):
        return None
    if not isinstance(error, dict):
        return None
    first = " ".join(str(error.get("message", "")).splitlines()[:2])
    return short(f"{error.get('type', 'error')}: {first}", LESSON_CHARS)


def decisions(messages: list[dict[str, Any]]) -> list[str]:
    """The denials and errors among `messages`' results, one line each, in order: a summary carries them as they
    were, whatever the model's text says (level L1; the plan's changes are `todo` calls, carried as protected)."""
    names = tool_names(messages)
    out = []
    for m in messages:
        if m.get("role") == "tool" and (kept := lesson(str(m.get("content", "")))) is not None:
            tool, args = names.get(m.get("tool_call_id", ""), ("?", ""))
            out.append(f"- {tool} {short(args, ELIDE_VALUE_CHARS)}: {kept}")
    return out


def frozen_end(messages: list[dict[str, Any]], limit: int, kinds: ToolKinds) -> int:
    """Where the part no summary changes again ends: the system prompt and the task, then earlier summaries
    and the whole calls kept after them (an assistant message calling only `kinds.whole`, with its results)."""
    kept = 2
    while kept < limit:
        m = messages[kept]
        if str(m.get("content") or "").startswith(SUMMARY_MARKER) and m.get("role") == "user":
            kept += 1
            continue
        calls = m.get("tool_calls") or []
        if m.get("role") != "assistant" or not calls or any(c["function"].get("name") not in kinds.whole
                                                            for c in calls):
            break
        ids = [c.get("id") for c in calls]
        answers = messages[kept + 1: kept + 1 + len(ids)]
        if kept + 1 + len(ids) > limit or [a.get("tool_call_id") for a in answers] != ids:
            break
        kept += 1 + len(ids)
    return kept


def whole_calls(messages: list[dict[str, Any]], kinds: ToolKinds) -> list[dict[str, Any]]:
    """The calls of `kinds.whole` tools in `messages` with their results, as messages that stand on their own:
    each assistant message keeps only those calls (a server wants every call answered)."""
    out: list[dict[str, Any]] = []
    results = {m.get("tool_call_id"): m for m in messages if m.get("role") == "tool"}
    for m in messages:
        calls = [c for c in m.get("tool_calls") or [] if c["function"].get("name") in kinds.whole
                 and c.get("id") in results]
        if m.get("role") != "assistant" or not calls:
            continue
        out.append(m if len(calls) == len(m["tool_calls"]) else {**m, "tool_calls": calls})
        out += [results[c.get("id")] for c in calls]
    return out


def summarized(messages: list[dict[str, Any]], summary: str, keep_from: int, kinds: ToolKinds,
               carry: Callable[[str, str, str, str], str] | None = None) -> list[dict[str, Any]]:
    """[system, task, earlier summaries…, this summary, whole calls…, …recent turns]. What was summarized
    before is never changed again: it stays part of the stable prefix, and the new summary covers what came
    after. Each protected call in the summarized part is carried over as one line, `carry(call_id, tool,
    arguments, output)` (default `carried_line` with no reference): small ones verbatim, large ones
    by reference, so that a summary of a run of big writes actually frees their bytes. Skills and subagent
    answers are not summarized: their calls and results stay whole, right after the summary."""
    kept = frozen_end(messages, keep_from, kinds)
    names = tool_names(messages)
    line = carry or (lambda _id, tool, args, output: carried_line(tool, args, output, None))
    carried = [line(m["tool_call_id"], *names[m["tool_call_id"]], str(m.get("content", "")))
               for m in messages[kept:keep_from]
               if m.get("role") == "tool" and names.get(m.get("tool_call_id", ""), ("", ""))[0] in kinds.protected
               and names[m["tool_call_id"]][0] not in kinds.whole]
    lines = decisions(messages[kept:keep_from])
    text = f"{SUMMARY_MARKER}\n"
    if lines:
        head = "Decisions and errors, as they were" + (
            f" (the last {DECISION_LINES} of {len(lines)})" if len(lines) > DECISION_LINES else "")
        text += head + ":\n" + "\n".join(lines[-DECISION_LINES:]) + "\n\n"
    text += summary
    if carried:
        text += "\n\nOutputs kept from the summarized part:\n" + "\n".join(carried)
    return [*messages[:kept], {"role": "user", "content": text}, *whole_calls(messages[kept:keep_from], kinds),
            *messages[keep_from:]]


def by_reference(messages: list[dict[str, Any]], before: int, ref: Callable[[str, str, str], str | None],
                 kinds: ToolKinds) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """The large arguments of `kinds.by_reference` calls before index `before` that have run (their result is
    in) replaced by their size and where the whole call is, `ref(call_id, tool, arguments)` (a spill file and its
    hash): the file written holds the content now. Arguments stay valid JSON with the same keys; a call already
    kept by reference is short and never changed again."""
    answered = {m.get("tool_call_id") for m in messages[:before] if m.get("role") == "tool"}
    tools = kinds.by_reference
    out: list[dict[str, Any]] = []
    counts: dict[str, int] = {}
    for i, m in enumerate(messages):
        calls = m.get("tool_calls") or []
        if i >= before or not any(_large(c, tools, answered) for c in calls):
            out.append(m)
            continue
        new_calls = []
        for c in calls:
            if _large(c, tools, answered):
                name, args = c["function"].get("name", ""), c["function"].get("arguments", "")
                c = {**c, "function": {**c["function"],
                                       "arguments": elide_arguments(args, note=ref(c.get("id", ""), name, args))}}
                counts[name] = counts.get(name, 0) + 1
            new_calls.append(c)
        out.append({**m, "tool_calls": new_calls})
    return out, counts


def _large(call: dict[str, Any], tools: frozenset[str], answered: set[Any]) -> bool:
    function = call.get("function") or {}
    return (function.get("name") in tools and call.get("id") in answered
            and len(function.get("arguments") or "") > CARRY_INLINE_CHARS)


CARRY_INLINE_CHARS = 1000  # a protected call up to this size is carried verbatim into a summary
ELIDE_VALUE_CHARS = 80  # in a call carried by reference, argument values longer than this are elided
CARRY_OUTPUT_CHARS = 120  # and its output is cut to this


def carried_line(tool: str, arguments: str, output: str, ref: str | None) -> str:
    """One protected call in a summary: verbatim when small; else its arguments with long values
    elided, the start of its output, and where the whole call is (`ref`: a spill file and its hash)."""
    if len(arguments) + len(output) <= CARRY_INLINE_CHARS:
        return f"- {tool} {arguments}: {output}"
    where = f"full call: {ref}" if ref else "full call: use memory_search"
    return f"- {tool} {elide_arguments(arguments)}: {short(output, CARRY_OUTPUT_CHARS)} [{where}]"


def elide_arguments(arguments: str, limit: int = ELIDE_VALUE_CHARS, note: str | None = None) -> str:
    """The call's JSON arguments with every value longer than `limit` replaced by its size, so a
    `write` keeps its path but not its content; `note` (where the whole call is) follows each size."""
    try:
        args = json.loads(arguments)
    except ValueError:
        return short(arguments, limit)
    if not isinstance(args, dict):
        return short(arguments, limit)
    out = {}
    for key, value in args.items():
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        out[key] = value if len(text) <= limit else (f"<{len(text)} chars; {note}>" if note else f"<{len(text)} chars>")
    return json.dumps(out, ensure_ascii=False)


COMPACTION_PROMPT = (
    "Context is running out. Write a summary of the conversation so far that lets you continue the task "
    "without it. Cover: the goal; decisions made; errors and approaches that failed; files read or changed "
    "(paths); progress; next steps. Be concrete and brief. Do not call tools."
)
