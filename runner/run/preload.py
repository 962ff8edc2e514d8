"""`--preset small`: the files the task names, read for the model before its first request (issue 44).

Against a 1.5B model (bench/bench_solve.py) the first reply was prose around an edit of text the model had never seen
(`old_string` invented), on 8 chores of 8: it never called `read` first. So the runner reads them: each file the task
(then its `check:` command) names by a relative path that is a file in the workspace, as an ordinary `read` call
through the whole call pipeline — the policy decides it, its hooks run, `tool_call` (`source: "preset"`) and
`tool_result` are recorded — and put in the conversation as an
assistant call and its tool message, one pair per file: the model starts with the text it must change and an example
of a well-formed call in its history, which a small model copies. They are the runner's reads, not the agent's:
`write` still replaces only a file the agent read itself (`AgentState.shown`, not `seen`), so a file read for it
is changed with `edit`, or read first. The 1.5B model's first call was, run after run, a `read` of the last file
read for it — and given the same text again, its next reply was empty; so the agent's own first read of such a
file, unchanged, ends with a note that it is unchanged since, and how to go on (runner/tools/read.py).

It never widens what the run may do: a file is read only when the policy allows the model's own `read` of it (asked
first, without a record: a denial of the runner's own making would turn the run's verdict to `denied`, exit 3); a
file it would deny or ask about is left alone, no event and no content. A read that is still not ok (a PreToolUse
hook refused it, the file went) leaves only its events, nothing in the conversation: the model learns nothing of it.

The caps keep the first request small, since a small model is usually served with a small window (llama.cpp's
default is 4,096 tokens): at most 3 files, each at most 8 KiB, 12 KiB in all (about 3,000 tokens at chars/4 beside
the ≤ 1,400-token request of a task that names none); a larger file is the model's to read, in parts."""

from __future__ import annotations

import contextlib
import hashlib
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from runner.core.events import Emit, Event, ToolResult
from runner.core.jsonutil import canonical
from runner.engine.build import Agent
from runner.engine.call import CallEnv, handle_call
from runner.policy.decide import decide
from runner.tools.base import ToolError
from runner.tools.paths import resolve

MAX_FILES = 3
MAX_BYTES = 8 * 1024  # each
MAX_TOTAL = 12 * 1024

# A relative path as a task writes one: `stats.py`, mypkg/__init__.py, "config.json" (an extension is required: a
# bare word is a word). Not a URL's or an absolute path's tail: nothing word-like or a slash just before it.
_PATH = re.compile(r"(?<![\w./:\\~-])((?:[\w.-]+/)*[\w.-]*\w\.[A-Za-z]\w{0,9})(?![\w/-])")


def named_files(texts: list[str], workspace: Path, allowed: Callable[[str], bool] = lambda _rel: True) -> list[str]:
    """The relative paths the texts name, in order, that are regular files inside `workspace` within the caps and
    that `allowed` lets the model read."""
    base = workspace.resolve()
    out: list[str] = []
    total = 0
    for text in texts:
        for match in _PATH.finditer(text):
            rel = match.group(1)
            if rel in out or rel.startswith("../") or "/../" in rel:
                continue
            try:
                path = (base / rel).resolve()
                if not (path.is_relative_to(base) and path.is_file()):
                    continue
                size = path.stat().st_size
            except (OSError, ValueError):
                continue
            if size > MAX_BYTES or total + size > MAX_TOTAL or not allowed(rel):
                continue
            out.append(rel)
            total += size
            if len(out) == MAX_FILES:
                return out
    return out


def preload(agent: Agent, emit: Emit, texts: list[str], workspace: Path) -> list[dict[str, Any]]:
    """The messages that read each named file (named_files) for the model, through the agent's call pipeline at
    turn 1; none when `read` is not offered."""
    if "read" not in (t["function"]["name"] for t in agent.tools):
        return []
    messages: list[dict[str, Any]] = []
    ok: dict[str, bool] = {}

    def seen(event: Event) -> None:
        if isinstance(event, ToolResult):
            ok[event.call_id] = event.ok
        emit(event)

    for i, rel in enumerate(named_files(texts, workspace, lambda rel: _allowed(agent.env, rel))):
        call_id = f"call_preset_{i}"
        call = {"id": call_id, "type": "function", "function": {"name": "read", "arguments": canonical({"path": rel})}}
        content = handle_call(call, agent.env, 1, seen, source="preset")
        path = resolve(agent.env.ctx, rel)
        if str(path) in agent.state.seen:  # the runner's read, not the agent's: `write` may not replace it for that
            agent.state.seen.discard(str(path))
            with contextlib.suppress(OSError):  # gone since: nothing to say of it
                agent.state.shown[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
        if ok.get(call_id):
            messages += [{"role": "assistant", "content": None, "tool_calls": [call]},
                         {"role": "tool", "tool_call_id": call["id"], "content": content}]
    return messages


def _allowed(env: CallEnv, rel: str) -> bool:
    """Whether the policy lets the model read `rel` as it would decide the model's own call (not recorded). Never
    with a PreToolUse hook configured, nor past the agent's restrictions: either could refuse the read as a recorded
    denial, and a denial of the runner's own making would turn the run's verdict to `denied`."""
    tool = env.registry.get("read")
    if tool is None or (env.hooks is not None and env.hooks.any("PreToolUse")):
        return False
    args = {"path": rel}
    try:
        targets = tool.targets(args, env.ctx)
    except ToolError:
        return False
    if env.restrict is not None and env.restrict.refuses("read", targets) is not None:
        return False
    return decide(env.policy, tool.domain, targets, base_risk=tool.risk_of(args, env.ctx)).allowed
