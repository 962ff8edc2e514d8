"""Claude Code's hook contract read as one pure function (runner/engine/workflow_hooks.py outcome): what an exit
code and a hook's stdout decide, and what onError makes of a failure."""

from __future__ import annotations

import json

import pytest

from runner.engine.workflow_hooks import HookRun, Outcome, outcome

_LONG = f"its stdout passed 1 MiB ({(1 << 20) + 1} bytes): too long to read as its answer"


def _run(code: int | None, stdout: str = "", stderr: str = "", failure: str | None = None) -> HookRun:
    return HookRun(code, stdout, stderr, 0.1, failure)


@pytest.mark.parametrize(("run", "on_error", "event", "expected"), [
    (_run(2, stderr="no grep\n"), "ignore", "PreToolUse", Outcome("block", "no grep")),
    (_run(0, json.dumps({"decision": "block", "reason": "tests fail"})), "ignore", "Stop",
     Outcome("block", "tests fail")),
    (_run(0, json.dumps({"hookSpecificOutput": {"permissionDecision": "ask", "permissionDecisionReason": "why"}})),
     "ignore", "PreToolUse", Outcome("ask", "why")),
    (_run(0, json.dumps({"hookSpecificOutput": {"permissionDecision": "allow"}})), "ignore", "PreToolUse",
     Outcome("allow")),
    (_run(0, json.dumps({"continue": False, "stopReason": "enough"})), "ignore", "PostToolUse",
     Outcome("stop", "enough")),
    (_run(0, json.dumps({"hookSpecificOutput": {"additionalContext": "ctx"}})), "ignore", "PostToolUse",
     Outcome(context="ctx")),
    (_run(0, "plain text\n"), "ignore", "PostToolUse", Outcome()),  # plain stdout is context at SessionStart only
    (_run(0, "plain text\n"), "ignore", "SessionStart", Outcome(context="plain text")),
    (_run(1, stderr="boom"), "ignore", "PreToolUse", Outcome(None, "a hook failed (exit code 1)", error="exit code 1")),
    (_run(1, stderr="boom"), "deny", "PreToolUse", Outcome("deny", "a hook failed (exit code 1)", error="exit code 1")),
    (_run(None, failure="killed at its timeout (1s)"), "deny", "Stop",
     Outcome("deny", "a hook failed (killed at its timeout (1s))", error="killed at its timeout (1s)")),
    (_run(0, "{not json"), "ignore", "PreToolUse",
     Outcome(None, "a hook failed (its stdout starts like JSON but is not)",
             error="its stdout starts like JSON but is not")),
    # A stdout past OUTPUT_CAP was not kept whole: no answer is read from it; an exit 2 still blocks.
    (HookRun(0, '{"decision": "block"}', "", 0.1, None, (1 << 20) + 1), "deny", "PreToolUse",
     Outcome("deny", f"a hook failed ({_LONG})", error=_LONG)),
    (HookRun(2, "y\n", "tests fail", 0.1, None, 1 << 30), "ignore", "Stop", Outcome("block", "tests fail")),
])
def test_what_a_hook_said(run, on_error, event, expected):
    assert outcome(run, on_error, event) == expected
