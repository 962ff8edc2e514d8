"""Policy tools for humans: explain one decision, simulate a recorded run under another policy.

Both decide exactly as a run does: same targets, same rules, same hard limits.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from runner.policy.agentfiles import AgentFiles
from runner.policy.decide import CallDecision, approval_scope, decide
from runner.policy.gitwrites import git_write
from runner.policy.hooks import TOOL_EVENTS, hook_entries, hook_programs
from runner.policy.limits import hard_limit_rules, protected_paths
from runner.policy.model import Policy
from runner.policy.targets import targets_for
from runner.record.rundir import portable


def with_hard_limits(policy: Policy, workspace: Path, runs_dir: Path) -> Policy:
    agent_files = AgentFiles.of(workspace, policy)
    protected = protected_paths(workspace, runs_dir, policy.files, hook_programs(policy.sections, workspace),
                                agent_files=agent_files)
    return policy.with_rules(hard_limit_rules(workspace, protected, agent_files))


def describe(d: CallDecision, policy: Policy | None = None, root: Path | None = None) -> dict[str, Any]:
    """The decision as data; with `policy` and `root`, each of the policy's files named as the project's printed
    commands name a path (`portable`: relative to `root` inside it, else as given), not by its absolute path."""
    rule = d.deciding.rule
    targets = [t.describe() for t in d.targets]
    deciding = rule.describe() if rule else None
    data = {
        "domain": d.domain, "mode": d.mode, "decision": d.decision, "headless_decision": d.effective,
        "targets": targets, "rule": deciding, "risk": d.risk, "approval_scope": approval_scope(d),
    }
    if policy is None or root is None:
        return data
    for described in [deciding, *(t.get("rule") for t in targets)]:
        if isinstance(described, dict) and described.get("file") in policy.files:
            described["file"] = portable(str(described["file"]), root)
    return data


def explain(policy: Policy, domain: str, value: str, workspace: Path, runs_dir: Path,
            mode: str | None = None, sandbox: str = "auto") -> dict[str, Any]:
    """`sandbox`: the sandbox's mode a run would have (`off`: no read-only `.git` to note)."""
    full = with_hard_limits(policy, workspace, runs_dir)
    data = {"input": value,
            **describe(decide(full, domain, targets_for(domain, value, workspace), mode), policy, workspace)}
    notes = sandbox_notes(data["targets"], sandbox)
    data = {**data, "hooks": hooks_for(policy, domain) if data["decision"] != "deny" else []}
    return {**data, "notes": notes} if notes else data


def hooks_for(policy: Policy, domain: str) -> list[dict[str, Any]]:
    """The policy's PreToolUse and PostToolUse hooks that would judge an allowed call in `domain`: each entry
    whose matcher takes a core tool of the domain (by its name or an alias), with those tools."""
    if not hook_entries(policy.sections):
        return []
    from runner.tools.registry import CORE  # the tool classes import httpx (web_fetch): only when hooks are there

    tools = [cls for cls in CORE if cls.domain == domain]
    out = []
    for entry in hook_entries(policy.sections):
        if entry.event not in TOOL_EVENTS:
            continue
        matched = [cls.name for cls in tools if entry.matches((cls.name, *cls.aliases))]
        out += [{"event": entry.event, "matcher": entry.matcher, "command": h.command, "tools": matched,
                 "onError": h.on_error} for h in entry.hooks if matched]
    return out


def sandbox_notes(targets: list[dict[str, Any]], sandbox: str) -> list[str]:
    """What an allowed command meets in the sandbox that the policy does not decide: git writing its repository
    runs into the read-only `.git` (runner/sandbox/gitmounts.py) and fails there."""
    if sandbox == "off":
        return []
    notes = []
    for t in targets:
        sub = git_write(t["target"].removeprefix("shell:")) if t["domain"] == "bash" and t["decision"] == "allow" \
            and t["target"].startswith("shell:") else None
        if sub is not None:
            notes.append(f"git {sub} writes the repository's .git, which the sandbox (mode {sandbox}) keeps read-only: "
                         "allowed, it fails in a run (exit 128, a sandbox_blocked warning); the runner lands the "
                         "change instead (--land)")
    return list(dict.fromkeys(notes))


def simulate(policy: Policy, run_dir: Path) -> dict[str, Any]:
    """Re-decide every tool call of a recorded run under `policy`; report what changes."""
    from runner.core.events import PermissionDecision, RunStarted, ToolCall
    from runner.engine.call import parse_call
    from runner.engine.cancel import RunCancel  # with the tools: a recorded run's calls only
    from runner.record.logged import parse_event  # the event log machinery: only for a recorded run
    from runner.record.rundir import read_events
    from runner.tools.base import ToolContext, ToolError
    from runner.tools.registry import core_tools

    events = [parse_event(record) for record in read_events(run_dir / "events.jsonl")]
    started = next((e for e in events if isinstance(e, RunStarted)), None)
    if started is None:
        raise ValueError(f"{run_dir}: no run_started event")
    workspace = Path(started.workspace)
    full = with_hard_limits(policy, workspace, run_dir.parent)
    before = {e.call_id: e for e in events if isinstance(e, PermissionDecision)}
    registry, ctx = core_tools(), ToolContext(workspace=workspace, cancel=RunCancel())
    calls, changed = 0, []
    for call in (e for e in events if isinstance(e, ToolCall)):
        try:
            tool, args = parse_call(call.tool, call.arguments, registry)
            targets = tool.targets(args, ctx)
        except ToolError:
            continue  # never reached the policy in the recorded run either
        calls += 1
        now = decide(full, tool.domain, targets, base_risk=tool.risk_of(args, ctx))
        old = before.get(call.call_id)
        was = old.decision if old else None
        if was != now.effective:
            changed.append({"call_id": call.call_id, "tool": call.tool, "arguments": call.arguments,
                            "before": was, "after": now.effective, "decision": describe(now, policy, Path.cwd())})
    return {"run_dir": str(run_dir), "policy": portable(policy.path, Path.cwd()), "calls": calls, "changed": changed,
            "newly_allowed": sum(1 for c in changed if c["after"] in ("allow", "auto_approved")),
            "newly_denied": sum(1 for c in changed if c["after"] == "deny")}


def dumps(data: object) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False)


# --- text for a terminal (the default; --json prints the dicts above) ---------------------------------


def explain_text(data: dict[str, Any]) -> str:
    """`policy explain` for a human: the call's decision, the deciding rule, then one line per target."""
    headless = data["headless_decision"]
    lines = [f"{data['domain']}: {_one_line(data['input'])}",
             f"decision: {data['decision']}" + ("" if headless == data["decision"] else f" (headless: {headless})")
             + f", mode {data['mode']}",
             f"rule: {_deciding(data)}", f"risk: {data['risk']}", "", "targets:"]
    lines += _targets(data["targets"], data["domain"], "  ")
    hooks = data.get("hooks") or []
    lines += ["", "hooks:", *(f"  {h['event']} [{h['matcher'] or '*'}] {h['command']} ({', '.join(h['tools'])})"
                              for h in hooks)] if hooks else []
    notes = data.get("notes") or []
    lines += ["", *(f"note: {note}" for note in notes)] if notes else []
    return "\n".join(lines)


def simulate_text(data: dict[str, Any]) -> str:
    """`policy simulate` for a human: the counts, then each call whose outcome changes and why."""
    changed = data["changed"]
    lines = [f"policy: {data['policy']}", f"run:    {data['run_dir']}",
             f"{data['calls']} calls, {len(changed)} change(s): {data['newly_allowed']} newly allowed, "
             f"{data['newly_denied']} newly denied"]
    for c in changed:
        d = c["decision"]
        lines += ["", f"{c['call_id']}  {c['tool']}  {c['before'] or '(no decision)'} -> {c['after']}",
                  f"  rule: {_rule(d['rule'])}"]
        lines += _targets(d["targets"], d["domain"], "  ")
    return "\n".join(lines)


def _targets(targets: list[dict[str, Any]], domain: str, indent: str) -> list[str]:
    shown = [(t["decision"], (t["target"] if t["domain"] == domain else f"{t['domain']} {t['target']}"), t)
             for t in targets]
    width = min(max((len(_one_line(s)) for _, s, _ in shown), default=0), 60)
    lines = []
    for decision, target, t in shown:
        why = f"note: {t['note']}" if t.get("note") else _rule(t["rule"])
        lines.append(f"{indent}{decision:<5}  {_one_line(target):<{width}}  {why}")
    return lines


def _deciding(data: dict[str, Any]) -> str:
    """The deciding rule; when none, what decided instead if it was the risk section (not "no rule matched")."""
    if data["rule"] is None:
        asked = next((t for t in data["targets"] if (t.get("note") or "").startswith("risk ")), None)
        if asked is not None and asked["decision"] == data["decision"]:
            return f"risk.askAtOrAbove ({asked['note']})"
    return _rule(data["rule"])


def _rule(rule: dict[str, Any] | None) -> str:
    if rule is None:
        return "no rule matched (ask)"
    where = rule["file"] + (f":{rule['line']}" if rule.get("line") else "")
    return f"{rule['pattern']} -> {rule['decision']}  ({where}, rule {rule['index']})"


def _one_line(text: str) -> str:
    """A target or input on one line: a newline in a command must not look like a second target."""
    return text.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
