"""Whether a killed run's policy snapshot may be used when no `--policy` is given.

A run directory is data, often inside the untrusted workspace. Without `AGENT_RUN_AUDIT_KEY` its log is a
plain sha256 chain: whoever can write the directory edits `policy.json`, puts the new sha256 in
`run_started.policy_sha256` and chains the log again, and a killed run has no summary whose seal could
disagree. The recorded policy *name* is in that same log, so re-reading "the file the run names" proves
nothing either (it could name `full-access`). So a killed run's snapshot is used only when

- a key given now vouches for the chain (the run is keyed under it, its commands were sandboxed), or
- it is the policy this job would take now without a flag — `AGENT_RUN_POLICY` in the job's
  environment, else the shipped `default` — re-derived from that trusted source and equal to it
  (rules, sections, mode; a narrowing an untrusted task added only tightens and may differ);

otherwise resume and fork refuse (exit 2) and the person names the policy with `--policy`.
Held by tests/cli/test_resume_trust.py.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from runner.core.outcome import UsageError
from runner.policy.jsonc import PolicyError
from runner.policy.load import load_policy, portable_snapshot
from runner.record.integrity import AUDIT_KEY_ENV, audit_key, key_id
from runner.sessions.load import Recorded


def vouched(run: Recorded) -> bool:
    """The run's chain was checked under the key given now, and no command of the run could read that key."""
    key = audit_key(os.environ)
    kid = run.started.get("audit_key_id")
    return (key is not None and isinstance(kid, str) and key_id(key) == kid
            and bool((run.started.get("sandbox") or {}).get("active")))


def trusted_snapshot(run: Recorded, spec: str | None, workspace: Path, mode: str | None = None) -> None:
    """UsageError when a killed, unkeyed run's policy.json is not the job's own policy re-derived now."""
    if spec or run.sealed or vouched(run):
        return
    trusted = os.environ.get("AGENT_RUN_POLICY") or "default"
    how = (f"{run.run_dir.name} was killed before its summary and its log is not keyed (no {AUDIT_KEY_ENV}), so "
           "its policy snapshot could have been rewritten with the log")
    try:
        fresh = load_policy(trusted)
        recorded = json.loads((run.run_dir / "policy.json").read_text(encoding="utf-8"))
    except (PolicyError, OSError, ValueError) as exc:
        raise UsageError(f"{how}, and it cannot be compared with the policy {trusted!r} ({exc}); name the policy "
                         "with --policy") from None
    mine = comparable(recorded, ignore_mode=mode is not None)
    theirs = comparable(portable_snapshot(fresh.resolved, run.home or workspace), ignore_mode=mode is not None)
    if mine != theirs:
        raise UsageError(f"{how}; it is not the policy this job uses ({trusted!r}), so it is not used: name the "
                         "policy with --policy")


def comparable(snapshot: Any, *, ignore_mode: bool) -> Any:
    """A policy.json as it decides: its files' rules by their place in the extends chain (not by path), the
    sections and the mode; without the rules every run adds for itself (its outputs, the hard limits), the
    run's `--approve` rules (never carried over) and a narrowing (which only tightens)."""
    if not isinstance(snapshot, dict):
        return snapshot
    dropped = ("files", "narrowed_by", "mode") if ignore_mode else ("files", "narrowed_by")
    data = {k: v for k, v in snapshot.items() if k not in dropped}
    files = [str(f) for f in snapshot.get("files") or []]
    permission = data.get("permission")
    if isinstance(permission, dict) and isinstance(permission.get("rules"), list):
        rules = [(r.get("domain"), r.get("pattern"), r.get("decision"), files.index(str(r.get("source"))))
                 for r in permission["rules"] if isinstance(r, dict) and str(r.get("source")) in files]
        data["permission"] = {**permission, "rules": rules}
    return data
