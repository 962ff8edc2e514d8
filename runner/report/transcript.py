"""transcript.md: a run as a person reads it — the task, each turn (what the model said, every call
with its decision and the rule that decided it, the output, warnings, compaction points), then the
final answer, the check's output, the denials with their commands, usage and cost.

`render` is a pure function of the events (read back typed: runner/record/logged.py), summary.json and the task
text; both sources are masked already, so the transcript is too. Plain Markdown that renders on
GitHub and reads in a terminal: outputs in fenced blocks whose fence is longer than any backtick
run inside, cut to OUTPUT_LINES lines (the spill file or the event says where the rest is).
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from runner.core.events import (
    MAIN,
    CheckFinished,
    Compaction,
    GuardWarning,
    ModelFallback,
    ModelRequest,
    ModelResponse,
    ModelRetry,
    NetworkRequest,
    PermissionDecision,
    RunInterrupted,
    RunWarning,
    SubagentFinished,
    SubagentStarted,
    ToolCall,
    ToolResult,
    call_ref,
)
from runner.record.jsonl import BadLine
from runner.record.logged import Logged, read_log
from runner.report.markdown import code_span, fence
from runner.report.summary_file import read_summary

OUTPUT_LINES = 40
# A line of an output or of a call's arguments is cut there, as `runs show`'s text view cuts what it shows (`…` at
# the end): a result that is one 100 MB line costs a transcript a thousand characters, not a hundred megabytes.
LINE_CHARS = 1000
CHECK_TAIL_LINES = 60
CHECK_CALL_ID = "check"
_TAIL_TOOLS = frozenset({"bash"})  # errors come last: show the end of their output


def split_result(content: str) -> tuple[str | None, str]:
    """(error message, output) of a tool result's content: an error result is a JSON object
    `{"error": {"message", "output"?, …}}`; anything else is the output itself."""
    if content.startswith('{"error"'):
        try:
            error = json.loads(content).get("error")
        except (json.JSONDecodeError, AttributeError):
            error = None
        if isinstance(error, dict):
            return str(error.get("message") or error.get("type") or "error"), str(error.get("output") or "")
    return None, content


def tail_lines(text: str, n: int) -> str:
    return "\n".join(text.rstrip("\n").splitlines()[-n:]) if text.strip() else ""


def cut_lines(text: str, n: int = OUTPUT_LINES, *, from_end: bool = False) -> tuple[str, int]:
    """At most n lines of text, each cut at LINE_CHARS characters, and how many lines were left out."""
    lines = text.rstrip("\n").splitlines()
    left = max(0, len(lines) - n)
    if left:
        lines = lines[-n:] if from_end else lines[:n]
    return "\n".join(map(cut_line, lines)), left


def cut_line(line: str) -> str:
    return line if len(line) <= LINE_CHARS else line[: LINE_CHARS - 1] + "…"


def _code(text: Any) -> str:
    return code_span(str(text), in_table=False)


def _quote(text: str) -> list[str]:
    """The model's text as quoted Markdown, defused: it is rendered where people read the run (GitHub's step
    summary, transcript.md), so no image a viewer's browser would fetch (`![…](url)` can carry data out) and
    no raw HTML (`</details>` would break the page; `<img>` fetches too)."""
    safe = text.strip().replace("<", "&lt;").replace("![", "!\\[")
    return [f"> {line}".rstrip() for line in safe.splitlines()] or [">"]


def _rule(rule: Mapping[str, Any] | None) -> str:
    if not rule:
        return "no rule matched (the mode's default)"
    where = Path(str(rule.get("file") or "?")).name if rule.get("file") != "--approve" else "--approve"
    if rule.get("line"):
        where += f":{rule['line']}"
    return f"rule {_code(str(rule.get('decision')) + ' ' + str(rule.get('pattern')))} ({where})"


def _arguments(tool: str, raw: Any) -> list[str]:
    try:
        args = json.loads(raw) if isinstance(raw, str) and raw.strip() else {}
    except json.JSONDecodeError:
        args = raw
    if tool == "bash" and isinstance(args, dict) and isinstance(args.get("command"), str):
        rest = {k: v for k, v in args.items() if k != "command"}
        extra = [f"with {_code(json.dumps(rest, ensure_ascii=False))}"] if rest else []
        return [fence("\n".join(map(cut_line, args["command"].split("\n"))), "sh"), *extra]
    text = str(raw) if not isinstance(args, dict) else json.dumps(args, ensure_ascii=False)
    if len(text) <= 160 and "\n" not in text:
        return [_code(text)]
    shown, left = cut_lines(json.dumps(args, indent=2, ensure_ascii=False) if isinstance(args, dict) else str(text))
    return [fence(shown, "json")] + ([f"*… {left} more lines of arguments*"] if left else [])


def _result(e: ToolResult, seq: int | None) -> list[str]:
    tool = str(e.tool or "")
    details = e.details or {}
    error, output = split_result(str(e.content or ""))
    head = "→ ok" if e.ok else f"→ **{e.error_type or 'error'}**" + (f": {error}" if error else "")
    out = [f"{head} ({_known(e.bytes)} bytes)"]
    if not output.strip() or (error and e.error_type in ("ApprovalRequired", "ToolNotAllowed")):
        return out
    from_end = tool in _TAIL_TOOLS
    shown, left = cut_lines(output, from_end=from_end)
    out += ["", fence(shown, "text")]
    notes = []
    if left:
        notes.append(f"{left} more line(s) {'above' if from_end else 'below'} not shown")
    if details.get("truncated") and details.get("output_path"):
        notes.append(f"the model saw a cut result; full output: {_code(details['output_path'])}")
    elif left:
        notes.append(f"the whole result is in events.jsonl (seq {seq})")
    if notes:
        out += ["", f"*{'; '.join(notes)}*"]
    return out


def _known(value: object) -> object:
    """A field a log of another version lacks (None read back) as the transcript shows an unknown figure."""
    return "?" if value is None else value


def _decision(e: PermissionDecision) -> list[str]:
    decision, policy = e.decision, e.policy_decision
    why = f" (the policy says {_code(policy)})" if policy != decision else ""
    if policy == "ask" and decision == "deny":
        why = f" (the policy says {_code(policy)}; nobody can approve in a headless run)"
    out = [f"Decision: **{decision}**{why} by {_rule(e.rule)}"]
    if decision == "deny":
        out += [f"- approve with: {_code('--approve ' + shlex.quote(a))}" for a in e.approve or []]
        if e.replay:
            out.append(f"- approve and run it: {_code(e.replay)}")
    return out


def render(events: Iterable[Logged], summary: Mapping[str, Any] | None, task: str | None = None) -> str:
    return "".join(render_streamed(events, summary, task))


def render_streamed(events: Iterable[Logged], summary: Mapping[str, Any] | None,
                    task: str | None = None) -> Iterator[str]:
    """The transcript in pieces, as the events are read: what `render` joins, never held whole (`runs show
    --transcript` of a log of any size). Trailing blank lines are left out and the text ends with one newline."""
    end = _Ending()
    for line in _lines(events, summary, task):
        if (piece := end.piece(line)):
            yield piece
    yield "\n"


class _Ending:
    """`"\n".join(lines).rstrip("\n")`, piece by piece: the newlines at the end of what was given are held back
    until more text follows them."""

    def __init__(self) -> None:
        self.first, self.held = True, ""

    def piece(self, line: str) -> str:
        text = line if self.first else "\n" + line
        self.first = False
        kept = text.rstrip("\n")
        if not kept:
            self.held += text
            return ""
        out, self.held = self.held + kept, text[len(kept):]
        return out


def _lines(events: Iterable[Logged], summary: Mapping[str, Any] | None, task: str | None) -> Iterator[str]:
    s = dict(summary or {})
    out: list[str] = [f"# agent-run: {s.get('title') or s.get('run_id') or 'run'}", ""]
    ending = f"**{s.get('status', '?')}** (exit {s.get('exit_code', '?')})"
    out += [ending + (f": {s['reason']}" if s.get("reason") else ""), ""]
    facts = [("run", s.get("run_id")), ("model", s.get("model")), ("policy", s.get("policy"))]
    out += [" · ".join(f"{k} {_code(v)}" for k, v in facts if v), ""]
    if task is not None:
        out += ["## Task", "", fence(task, "markdown"), ""]
    check: list[Logged] = []
    # Per agent: a subagent's turns and requests interleave with its parent's in the one event log.
    states: dict[str, _Agent] = {}
    depth = 0
    for logged in by_agent(events):
        agent = logged.agent
        if agent is None and getattr(logged.event, "call_id", None) == CHECK_CALL_ID:
            check.append(logged)
            continue
        state = states.setdefault(str(agent.get("id")) if agent else MAIN, _Agent(agent))
        lines = _event(logged, state)
        if not lines:
            continue
        if state.depth != depth:
            # A child's events run inside its parent's `task` call: they are quoted one level deeper per
            # depth, and the quote is closed (or opened) by a blank line of the shallower depth's.
            _requote(out, depth, min(depth, state.depth))
            depth = state.depth
        prefix = "> " * depth
        out += [prefix + line if line else prefix.rstrip() for chunk in lines for line in chunk.split("\n")]
        yield from out[:-1]  # the last line stays: the next event's requote may change it
        del out[:-1]
    _requote(out, depth, 0)  # a child that never finished (an interrupted run): its quote ends here
    main = states.get(MAIN)
    answer = s.get("answer") if "answer" in s else (main.last_text if main else None)
    out += ["## Final answer", "", *(_quote(answer) if isinstance(answer, str) and answer.strip() else
                                     ["*(none)*"]), ""]
    out += _check_section(s.get("check"), check)
    out += _denials(s.get("denials") or [])
    out += _usage(s)
    yield from out


def by_agent(events: Iterable[Logged]) -> Iterator[Logged]:
    """The events, each subagent's in one piece: children that ran at once (--parallel-agents) interleave in the
    log, so a child's events are held until its `subagent_finished` and given together there, nested in the block
    of the agent one level up that is still running (the latest started: exact unless that level ran at once
    too). A child that never finished (an interrupted run) is given, as far as it went, before the run's own next
    event that is not part of a reply's calls (the interruption, the run's end). Only running children's events are
    held."""
    held: dict[str, list[Logged]] = {}  # a running child's events (and its finished children's)
    running: dict[int, list[str]] = {}  # depth -> running children's ids, in the order they started
    for e in events:
        agent = e.agent
        if agent is None:
            if not isinstance(e.event, _CALL_EVENTS):
                for block in held.values():
                    yield from block
                held.clear()
                running.clear()
            yield e
            continue
        aid, level = str(agent.get("id")), int(agent.get("depth") or 1)
        if aid not in held:
            held[aid] = []
            running.setdefault(level, []).append(aid)
        held[aid].append(e)
        if not isinstance(e.event, SubagentFinished):
            continue
        block = held.pop(aid)
        running[level].remove(aid)
        above = running.get(level - 1)
        if level > 1 and above:
            held[above[-1]].extend(block)
        else:
            yield from block
    for block in held.values():
        yield from block


_CALL_EVENTS = (ToolCall, PermissionDecision, ToolResult)


def _requote(out: list[str], depth: int, to: int) -> None:
    """End `out` with one blank line at quote depth `to` (the last event's blank line was at `depth`)."""
    blank = ("> " * to).rstrip()
    if out and out[-1] == ("> " * depth).rstrip():
        out[-1] = blank
    elif out and out[-1] != blank:
        out.append(blank)


class _Agent:
    """What rendering one agent's events needs to remember; `agent` is the events' `agent` (None: the run's own)."""

    def __init__(self, agent: Mapping[str, Any] | None) -> None:
        self.agent = agent
        self.depth = int(agent.get("depth") or 1) if agent else 0
        self.turn: Any = None
        self.asked = False  # a model_request is waiting for its response
        self.last_text: str | None = None
        # Headings one level below the subagent's own heading (####), whatever the depth: Markdown has six.
        self.turn_heading, self.call_heading = ("##", "###") if agent is None else ("#####", "######")


def _event(logged: Logged, state: _Agent) -> list[str]:
    """The lines of one event, unquoted (the caller nests a subagent's)."""
    e = logged.event
    out: list[str] = []
    if isinstance(e, ModelRequest):
        state.asked = True
    elif isinstance(e, ModelResponse):
        if not state.asked:  # the compaction call's reply: its text is the compaction's summary, shown there
            return []
        state.asked = False
        if e.turn != state.turn:
            state.turn = e.turn
            who = f" ({state.agent.get('id')})" if state.agent else ""
            out += [f"{state.turn_heading} Turn {state.turn}{who}", ""]
        message = e.message or {}
        text = message.get("content")
        if isinstance(text, str) and text.strip():
            state.last_text = text
            out += [*_quote(text), ""]
        elif not message.get("tool_calls"):
            out += ["*(no text)*", ""]
    elif isinstance(e, ModelRetry):
        out += [f"*model request retried (attempt {e.attempt}): {e.error}*", ""]
    elif isinstance(e, ModelFallback):
        out += [f"> ⚠️ **model {e.from_model} is down**: went on with {e.to_model} ({e.reason})", ""]
    elif isinstance(e, ToolCall):
        # A subagent's call ids repeat its parent's (each conversation numbers its own): named as `replay --call`
        # names them.
        ref = call_ref(dict(state.agent) if state.agent else None, str(e.call_id))
        out += [f"{state.call_heading} {_code(e.tool)} call {_code(ref)}", "",
                *_arguments(str(e.tool), e.arguments), ""]
    elif isinstance(e, PermissionDecision):
        out += [*_decision(e), ""]
    elif isinstance(e, ToolResult):
        out += [*_result(e, logged.seq), ""]
    elif isinstance(e, GuardWarning):
        out += [f"> ⚠️ **warning** ({e.detector}): {e.message}", ""]
    elif isinstance(e, RunWarning):
        out += [f"> ⚠️ **warning** ({e.code}): {e.message}", ""]
    elif isinstance(e, NetworkRequest):
        out += [f"*network: {e.host}:{e.port} — {e.decision}*", ""]
    elif isinstance(e, Compaction):
        out += ["---", "", f"**Compaction** ({e.stage}): {e.before_tokens} → {e.after_tokens} tokens", ""]
        if e.summary:
            out += ["<details><summary>The summary the model continued from</summary>", "",
                    fence(str(e.summary), "text"), "", "</details>", ""]
    elif isinstance(e, RunInterrupted):
        out += [f"🛑 **Interrupted** by {e.signal} (during {e.during})", ""]
    elif isinstance(e, SubagentStarted):
        out += _subagent_started(e, state.agent or {})
    elif isinstance(e, SubagentFinished):
        out += _subagent_finished(e, state.agent or {})
    return out


def _subagent_started(e: SubagentStarted, agent: Mapping[str, Any]) -> list[str]:
    description = " ".join(str(e.description or "").split())
    if len(description) > 120:
        description = description[:119] + "…"
    head = f"#### Subagent {agent.get('id')} ({e.name or agent.get('name')})" + (
        f": {description}" if description else "")
    profile = str(e.profile or "?") + ("" if e.trusted is not False else ", untrusted")
    facts = [f"model {_code(e.model)}", f"mode {_code(e.mode)}", f"profile {_code(profile)}",
             f"at most {_known(e.max_turns)} turns"]
    if e.tools:
        facts.append(f"tools {_code(', '.join(map(str, e.tools)))}")
    return [head, "", " · ".join(facts), ""]


def _subagent_finished(e: SubagentFinished, agent: Mapping[str, Any]) -> list[str]:
    parts = [f"{_known(e.turns)} turns", f"{_known(e.tool_calls)} tool calls"]
    if e.usage:
        parts.append(_tokens(e.usage))
    if e.duration_s is not None:
        parts.append(f"{e.duration_s:.1f} s")
    reason = f": {e.reason}" if e.reason else ""
    return [f"**Subagent {agent.get('id')} finished: {_known(e.status)}**{reason} · " + " · ".join(parts), ""]


def _check_section(check: Any, logged: list[Logged]) -> list[str]:
    if not isinstance(check, Mapping) and not logged:
        return []
    events = [e.event for e in logged]
    # summary.json `check`; else (a run killed before its summary) its check_finished event
    finished = next((e.fields() for e in reversed(events) if isinstance(e, CheckFinished)), {})
    check = check if isinstance(check, Mapping) else finished
    verdict = "passed" if check.get("ok") else "failed"
    took = f", {check['duration_s']:.1f} s" if isinstance(check.get("duration_s"), int | float) else ""
    out = ["## Check", "", f"**{verdict}** (exit code {check.get('exit_code')}{took}):", ""]
    if check.get("command"):
        out += [fence(str(check["command"]), "sh"), ""]
    decisions = [e for e in events if isinstance(e, PermissionDecision)]
    out += [line for e in decisions for line in (*_decision(e), "")]
    results = [e for e in events if isinstance(e, ToolResult)]  # a log from before check_finished
    tail = check.get("output_tail")
    if tail is None and results:
        tail = tail_lines(split_result(str(results[-1].content or ""))[1], CHECK_TAIL_LINES)
    if tail:
        out += [f"Output (the last {CHECK_TAIL_LINES} lines at most):", "", fence(tail, "text"), ""]
    if check.get("output_path"):
        out += [f"The whole output: {_code(check['output_path'])} in the run directory.", ""]
    return out


def _denials(denials: list[Mapping[str, Any]]) -> list[str]:
    if not denials:
        return []
    out = [f"## Denied calls ({len(denials)})", ""]
    for d in denials:
        out.append(f"- {_code(d.get('call_id'))} {d.get('tool')} on {_code(d.get('target'))} — {d.get('decision')} by "
                   f"{_rule(d.get('rule'))}")
        out += [f"  - approve with: {_code('--approve ' + shlex.quote(a))}" for a in d.get("approve") or []]
        if d.get("replay"):
            out.append(f"  - approve and run it: {_code(d['replay'])}")
    return [*out, ""]


def _usage(s: Mapping[str, Any]) -> list[str]:
    usage = s.get("usage") or {}
    if not usage:
        return []
    duration = s.get("duration_s")
    out = ["## Usage", "",
           f"{s.get('turns', '?')} turns · {s.get('tool_calls', '?')} tool calls · {_tokens(usage)} · cost "
           + _cost(usage.get("cost_usd")) + (f" · {duration:.1f} s" if isinstance(duration, int | float) else ""), ""]
    agents = [a for a in s.get("agents") or [] if isinstance(a, Mapping)]
    if len(agents) > 1:  # the run's own agent and its subagents; the line above is all of them together
        for a in agents:
            who = str(a.get("id"))
            if a.get("id") != MAIN:
                who += f" ({', '.join(str(v) for v in (a.get('name'), a.get('status')) if v)})"
            out.append(f"- {who}: {a.get('turns', '?')} turns · {a.get('tool_calls', '?')} tool calls · "
                       f"{_tokens(a.get('usage') or {})} · cost {_cost(a.get('cost_usd'))}")
        out.append("")
    return out


def _tokens(usage: Mapping[str, Any]) -> str:
    return (f"{usage.get('prompt_tokens', '?')} prompt tokens ({usage.get('cached_tokens', '?')} cached) · "
            f"{usage.get('completion_tokens', '?')} completion")


def _cost(cost: Any) -> str:
    return f"${cost:.4f}" if isinstance(cost, int | float) else "unknown"


def transcript_of(run_dir: Path, summary: Mapping[str, Any] | None = None) -> str:
    """The transcript of a run directory, from its events, summary.json (or `summary`) and task.md."""
    return "".join(transcript_streamed(run_dir, summary))


def transcript_streamed(run_dir: Path, summary: Mapping[str, Any] | None = None,
                        on_bad: Callable[[BadLine], None] | None = None) -> Iterator[str]:
    """`transcript_of` in pieces, the log read as they are written (render_streamed); a line of it that is no
    record is left out and told to `on_bad` (record/jsonl.py)."""
    if summary is None:  # a wrong-typed field is absent (a summary.json edited, truncated, or of another version)
        summary = read_summary(run_dir) or {}
    try:
        task = (run_dir / "task.md").read_text(encoding="utf-8", errors="replace")
    except OSError:
        task = None
    return render_streamed(read_log(run_dir / "events.jsonl", on_bad=on_bad),
                           summary if isinstance(summary, Mapping) else {}, task)
