"""`policy suggest`: the smallest allow rules that would have let a run's denied calls through.

Commands are generalized at their arity — `npm run test --watch` becomes
`npm run test *`, `git commit -m x` becomes `git commit *` — the way people write
rules; files and URLs stay exact.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from runner.policy.limits import HARD_LIMIT
from runner.policy.match import exact_pattern, split_target
from runner.policy.shell import command_words
from runner.rundir import read_events

# How many words name the action, for commands whose first word is not enough.
ARITY: dict[str, int] = {
    "git": 2, "npm": 2, "npm run": 3, "npx": 2, "yarn": 2, "yarn run": 3, "pnpm": 2, "pnpm run": 3,
    "bun": 2, "bun run": 3, "docker": 2, "docker compose": 3, "docker-compose": 2, "podman": 2,
    "kubectl": 2, "helm": 2, "terraform": 2, "cargo": 2, "go": 2, "pip": 2, "pip3": 2, "uv": 2, "uv run": 3,
    "poetry": 2, "poetry run": 3, "python -m": 3, "python3 -m": 3, "make": 2, "gh": 3, "aws": 3, "gcloud": 3,
    "az": 3, "dotnet": 2, "mvn": 2, "gradle": 2, "./gradlew": 2, "bundle": 2, "bundle exec": 3, "rake": 2,
    "brew": 2, "apt": 2, "apt-get": 2, "systemctl": 2, "deno": 2, "composer": 2, "mix": 2, "swift": 2,
}


def command_rule(command: str) -> str:
    """`shell:<prefix> *` for a simple command, cut at the command's arity."""
    pairs = command_words(command)
    # Leading assignments stay in the rule (the policy decides `FOO=1 make build` as written),
    # but the arity is looked up on the command after them.
    lead = 0
    while lead < len(pairs) and pairs[lead][1] is not None and "=" in str(pairs[lead][1]) and not str(
            pairs[lead][1]).startswith("="):
        lead += 1
    rest = [literal or "" for _, literal in pairs[lead:]]
    if not rest or pairs[lead][1] is None:
        return exact_pattern(f"shell:{command}")
    arity = 1
    for size in (3, 2, 1):
        key = " ".join(rest[:size])
        if len(rest) >= size and key in ARITY:
            arity = ARITY[key]
            break
    prefix = " ".join(text for text, _ in pairs[: lead + arity])
    if any(c in prefix for c in "*?[]"):
        return "regex:" + re.escape(f"shell:{prefix}") + "( .*)?"
    return f"shell:{prefix} *"


def rule_for(domain: str, target: str) -> str:
    scheme, rest = split_target(target)
    return command_rule(rest) if scheme == "shell" else exact_pattern(target)


def suggest(run_dir: Path) -> dict[str, Any]:
    events = read_events(run_dir / "events.jsonl")
    rules: list[dict[str, str]] = []
    skipped: list[dict[str, Any]] = []
    for e in events:
        if e["type"] != "permission_decision" or e["decision"] != "deny":
            continue
        for t in e["targets"]:
            if t["decision"] == "allow":
                continue
            if (t.get("rule") or {}).get("file") == HARD_LIMIT:
                skipped.append({"call_id": e["call_id"], "target": t["target"], "why": "hard limit"})
                continue
            rule = {"domain": t["domain"], "pattern": rule_for(t["domain"], t["target"]), "decision": "allow"}
            if rule not in rules:
                rules.append(rule)
    return {"rules": rules, "skipped": skipped}


def as_jsonc(run_dir: Path, found: dict[str, Any]) -> str:
    lines = [f"// Allow rules that would have let the denied calls of {run_dir.name} through.",
             "// Paste them at the end of permission.rules (the last matching rule wins)."]
    lines += [f'{{ "domain": "{r["domain"]}", "pattern": {_json(r["pattern"])}, "decision": "allow" }},'
              for r in found["rules"]]
    for s in found["skipped"]:
        lines.append(f"// not suggested: {s['target']} ({s['why']}: no policy can allow it)")
    if not found["rules"] and not found["skipped"]:
        lines.append("// nothing was denied in this run")
    return "\n".join(lines)


def _json(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)
