"""A summary.json read back for display (`runs list|show`, the transcript): a field of the wrong type is
treated as absent, never trusted into a traceback.

summary.json is written by the runner, but it is a file in a directory anyone can edit, copy from an older
or newer version, or truncate; a reader that prints it must survive `usage: "n/a"`, `denials: 5`, a list or
`null` for the whole file. Only the shape is checked here (what a display reads), not the meaning: a
well-typed but odd value is shown as it is.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from runner.workspace.repofile import read_capped

Check = Callable[[Any], bool]


def _str(v: Any) -> bool:
    return isinstance(v, str)


def _int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _num(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _dict(v: Any) -> bool:
    return isinstance(v, dict)


def _list_of(check: Check) -> Check:
    return lambda v: isinstance(v, list) and all(check(x) for x in v)


def _str_list(v: Any) -> bool:
    return _list_of(_str)(v)


# usage (the run's and each agent's): token counts and a cost.
_USAGE: dict[str, Check] = {"prompt_tokens": _int, "completion_tokens": _int, "cached_tokens": _int,
                            "total_tokens": _int, "cost_usd": _num, "price_source": _str}
_DENIAL: dict[str, Check] = {"call_id": _str, "tool": _str, "domain": _str, "target": _str, "decision": _str,
                             "rule": _dict, "approve": _str_list, "replay": _str, "rerun": _str, "agent": _dict}
_AGENT: dict[str, Check] = {"id": _str, "name": _str, "model": _str, "mode": _str, "status": _str, "reason": _str,
                            "parent_call_id": _str, "depth": _int, "turns": _int, "tool_calls": _int,
                            "cost_usd": _num}
# The top-level fields something displays; a field not named here is passed through as it is.
_FIELDS: dict[str, Check] = {
    "run_id": _str, "status": _str, "reason": _str, "answer": _str, "title": _str, "model": _str,
    "policy": _str, "replay_of": _str, "task_file": _str, "run_dir": _str, "resume": _str, "show": _str,
    "replay": _str, "changes_error": _str, "signal": _str,
    "exit_code": _int, "turns": _int, "tool_calls": _int, "duration_s": _num,
    "loop": _dict, "budget": _dict, "check": _dict, "resumed_from": _dict, "sandbox": _dict, "worktree": _dict,
    "integrity": _dict, "metrics": _dict, "ignored_new_files": _dict,
    "loop_warnings": _str_list, "warnings": _str_list, "changed_files": _str_list, "approved_calls": _str_list,
    "todos": lambda v: isinstance(v, list),
}


def _fields(data: Mapping[str, Any], checks: Mapping[str, Check]) -> dict[str, Any]:
    """data without the fields of the wrong type; None stays (it already reads as absent)."""
    return {k: v for k, v in data.items() if v is None or k not in checks or checks[k](v)}


def _agent(a: dict[str, Any]) -> dict[str, Any]:
    out = _fields(a, _AGENT)
    if "usage" in out:
        out["usage"] = _fields(out["usage"], _USAGE) if isinstance(out["usage"], dict) else None
    return out


def sane(data: Any) -> dict[str, Any] | None:
    """The summary with every wrong-typed field it displays dropped (inside usage, denials and agents too:
    a bad entry of a list is dropped, a bad key of an entry dropped); None when it is not an object."""
    if not isinstance(data, dict):
        return None
    out = _fields(data, _FIELDS)
    if "usage" in out:
        if isinstance(out["usage"], dict):
            out["usage"] = _fields(out["usage"], _USAGE)
        else:
            del out["usage"]
    for key, fix in (("denials", lambda d: _fields(d, _DENIAL)), ("agents", _agent)):
        if key not in out:
            continue
        if isinstance(out[key], list):
            out[key] = [fix(x) for x in out[key] if isinstance(x, dict)]
        else:
            del out[key]
    return out


def read_summary(run_dir: Path, cap: int | None = None) -> dict[str, Any] | None:
    """A run directory's summary.json made `sane`; None when it is missing, unreadable, not JSON, not an
    object (a run still going, or killed before it wrote one) or over `cap` bytes (default SUMMARY_CAP)."""
    cap = SUMMARY_CAP if cap is None else cap
    try:  # a regular file only, read without following a link or waiting on a FIFO, and never past the cap
        head, size, _ = read_capped(run_dir / "summary.json", cap, digest=False)
        if size > cap:
            return None
        data = json.loads(head.decode("utf-8", errors="replace"))
    except (OSError, ValueError, RecursionError):
        return None
    return sane(data)


SUMMARY_CAP = 64 << 20  # far above any summary agent-run writes; a copied run directory may hold anything
