"""`policy suggest`: the smallest allow rules that would have let a run's denied calls through.

Commands are generalized at their arity — `npm run test --watch` becomes
`npm run test *`, `git commit -m x` becomes `git commit *` — the way people write
rules; files and URLs stay exact. So do interpreters and wrappers (`python x.py`,
`bash run.sh`, `env FOO=1 make`, `xargs rm`, `sudo …`, `docker run …`): cut at their
arity they would allow anything, so the exact command is suggested, with a comment
saying why. Targets floored by a note (what the parser cannot prove harmless) are
listed as not suggestible: no rule lifts a floor.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from runner.core.events import PermissionDecision
from runner.policy.limits import HARD_LIMIT
from runner.policy.match import exact_pattern, split_target
from runner.policy.shell import command_words
from runner.record.logged import parse_event
from runner.record.rundir import read_events

# How many words name the action, for commands whose first word is not enough.
ARITY: dict[str, int] = {
    "git": 2, "npm": 2, "npm run": 3, "npx": 2, "yarn": 2, "yarn run": 3, "pnpm": 2, "pnpm run": 3,
    "bun": 2, "bun run": 3, "docker": 2, "docker compose": 3, "docker-compose": 2, "podman": 2,
    "kubectl": 2, "helm": 2, "terraform": 2, "cargo": 2, "go": 2, "pip": 2, "pip3": 2, "uv": 2, "uv run": 3,
    "poetry": 2, "poetry run": 3, "python -m": 3, "python3 -m": 3, "make": 2, "gh": 3, "aws": 3, "gcloud": 3,
    "az": 3, "dotnet": 2, "mvn": 2, "gradle": 2, "./gradlew": 2, "bundle": 2, "bundle exec": 3, "rake": 2,
    "brew": 2, "apt": 2, "apt-get": 2, "systemctl": 2, "deno": 2, "composer": 2, "mix": 2, "swift": 2,
}


# Programs that run whatever they are given: a rule `shell:python *` would allow any code.
_INTERPRETER = re.compile(r"(python|pypy|lua|ruby|perl|php|node|tclsh|wish)[0-9.]*|nodejs|deno|bun|irb|luajit|"
                          r"Rscript|R|julia|java|pwsh|powershell|osascript|g?awk|mawk|nawk|bash|sh|zsh|dash|ksh|"
                          r"mksh|fish|csh|tcsh|busybox")
_WRAPPERS = frozenset({
    "env", "xargs", "sudo", "su", "doas", "runuser", "nice", "nohup", "timeout", "time", "exec", "eval", "command",
    "builtin", "source", ".", "ssh", "stdbuf", "setsid", "ionice", "chrt", "taskset", "watch", "flock", "strace",
    "ltrace", "gdb", "valgrind", "script", "unbuffer", "parallel", "chroot", "nsenter", "unshare", "firejail",
    "bwrap", "sg", "newgrp", "trap",
})
# Subcommands that run any command (in a container, a pod, another host).
_RUNS_ANYTHING = frozenset({
    "docker run", "docker exec", "docker container run", "docker container exec", "docker compose run",
    "docker compose exec", "docker-compose run", "docker-compose exec", "podman run", "podman exec",
    "kubectl exec", "kubectl run", "kubectl debug", "npm exec", "pnpm exec", "pnpm dlx", "yarn exec", "yarn dlx",
})
# Runners whose next word is the program they run: exact when that program is an interpreter or wrapper.
_RUNNERS = frozenset({"uv run", "poetry run", "pipenv run", "pdm run", "hatch run", "rye run", "conda run",
                      "pipx run", "bundle exec", "npx", "bunx", "pnpx", "mise exec"})
_CODE_MODULES = frozenset({"runpy", "pdb", "code", "trace", "cProfile", "profile", "idlelib", "IPython"})


def why_exact(command: str) -> str | None:
    """Why only the exact command may be suggested (None: cutting it at its arity is fine)."""
    words = [literal for _, literal in command_words(command)]
    while words and words[0] is not None and "=" in words[0] and not words[0].startswith("="):
        words = words[1:]  # leading assignments
    if not words or None in words[:3]:
        return None
    prog = str(words[0]).rsplit("/", 1)[-1]
    if _INTERPRETER.fullmatch(prog):
        if prog.startswith(("python", "pypy")) and words[1:2] == ["-m"] and len(words) > 2 and \
                words[2] not in _CODE_MODULES:
            return None  # `python -m pytest`: the module is the program
        return f"{prog} runs whatever code it is given: only this exact command"
    if prog in _WRAPPERS:
        return f"{prog} runs the command it is given: only this exact command"
    for size in (3, 2):
        head = " ".join(str(w) for w in words[:size])
        if head in _RUNS_ANYTHING:
            return f"{head} runs any command: only this exact command"
    for size in (2, 1):
        head = " ".join(str(w) for w in words[:size])
        inner = next((str(w) for w in words[size:] if not str(w).startswith("-")), None) if head in _RUNNERS else None
        if inner is not None and why_exact(inner):
            return f"{head} {inner} runs whatever it is given: only this exact command"
    return None


def command_rule(command: str) -> str:
    """`shell:<prefix> *` for a simple command, cut at the command's arity; the exact command for
    interpreters and wrappers (see `why_exact`)."""
    if why_exact(command):
        return exact_pattern(f"shell:{command}")
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


def why_for(domain: str, target: str) -> str | None:
    scheme, rest = split_target(target)
    return why_exact(rest) if scheme == "shell" else None


def suggest(run_dir: Path) -> dict[str, Any]:
    rules: list[dict[str, str]] = []
    skipped: list[dict[str, Any]] = []
    for e in (parse_event(record) for record in read_events(run_dir / "events.jsonl")):
        if not isinstance(e, PermissionDecision) or e.decision != "deny":
            continue
        for t in e.targets or []:
            if t["decision"] == "allow":
                continue
            if (t.get("rule") or {}).get("file") == HARD_LIMIT:
                skipped.append({"call_id": e.call_id, "target": t["target"],
                                "why": "hard limit: no policy can allow it"})
                continue
            if (t.get("note") or "").startswith("risk "):  # the policy allows it, and asks for its risk
                skipped.append({"call_id": e.call_id, "target": t["target"],
                                "why": "asked for its risk: approve it (--approve, replay --call), or class it lower "
                                       "with a risk.rules entry"})
                continue
            if t["domain"] == "bash" and t.get("note"):  # floored at ask: what no rule can allow
                skipped.append({"call_id": e.call_id, "target": t["target"],
                                "why": f"{t['note']}: no rule can allow it, only mode full_access"})
                continue
            rule = {"domain": t["domain"], "pattern": rule_for(t["domain"], t["target"]), "decision": "allow"}
            why = why_for(t["domain"], t["target"])
            if why:
                rule["why"] = why
            if rule not in rules:
                rules.append(rule)
    return {"rules": rules, "skipped": skipped}


def as_jsonc(run_dir: Path, found: dict[str, Any]) -> str:
    lines = [f"// Allow rules that would have let the denied calls of {run_dir.name} through.",
             "// Paste them at the end of permission.rules (the last matching rule wins)."]
    for r in found["rules"]:
        if r.get("why"):
            lines.append(f"// exact: {r['why']} (a wider rule would allow anything)")
        lines.append(f'{{ "domain": "{r["domain"]}", "pattern": {_json(r["pattern"])}, "decision": "allow" }},')
    for s in found["skipped"]:
        lines.append(f"// not suggested: {s['target']} ({s['why']})")
    if not found["rules"] and not found["skipped"]:
        lines.append("// nothing was denied in this run")
    return "\n".join(lines)


def _json(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)
