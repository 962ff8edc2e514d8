"""`--findings`: a review's findings (runner/workspace/output_schema.py FINDINGS_SCHEMA) made into what reviewers
read — `findings.json` (paths made relative to the workspace), `findings.sarif` (runner/report/sarif.py) and job
annotations (runner/report/github.py) — and, with `--sarif-denials`, the run's denials as SARIF results too.

The final answer is the model's, so untrusted: a path is kept only when it names a place inside the workspace
(`./a.py`, `a.py`, or an absolute path under the workspace); anything else (`../x`, `/etc/passwd`, a URL) is
dropped with a `warning` event (code `finding_outside_workspace`), never written into a report as a location.
"""

from __future__ import annotations

import posixpath
from collections import Counter
from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any

from runner.core.events import RunWarning
from runner.record.rundir import portable, write_atomic, write_json
from runner.report.sarif import SARIF_FILE, sarif_log
from runner.workspace.output_schema import FINDINGS

FINDINGS_FILE = "findings.json"
SEVERITIES = ("error", "warning", "note")  # most severe first


def normalised_path(path: str, workspace: str) -> str | None:
    """`path` relative to the workspace, in POSIX form; None when it is not inside it."""
    text = path.strip().replace("\\", "/")
    if not text or "\x00" in text or "://" in text:
        return None
    root = workspace.rstrip("/")
    if text.startswith("/"):
        if not (text == root or text.startswith(root + "/")):
            return None
        text = text[len(root) + 1:]
    clean = posixpath.normpath(text)
    if clean in (".", "") or clean.startswith("../") or clean == ".." or PurePosixPath(clean).is_absolute():
        return None
    return clean


def normalise(value: Mapping[str, Any], workspace: str) -> tuple[dict[str, Any], list[str]]:
    """The findings with workspace-relative paths and a sane `end_line` (dropped when before `line`), most severe
    first (the model's order within a severity), and the paths of those dropped."""
    kept: list[dict[str, Any]] = []
    dropped: list[str] = []
    for finding in value.get("findings") or []:
        path = normalised_path(str(finding.get("path", "")), workspace)
        if path is None:
            dropped.append(str(finding.get("path", "")))
            continue
        item = {**finding, "path": path}
        if "end_line" in item and item["end_line"] < item["line"]:
            del item["end_line"]
        kept.append(item)
    kept.sort(key=lambda f: SEVERITIES.index(f["severity"]))
    return {"summary": value.get("summary", ""), "findings": kept}, dropped


class _Sarif:
    """A summary finisher (the run's end, before the seal): findings.sarif from the kept findings (if any), with the
    run's denials when `with_denials`."""

    def __init__(self, rec: Any, with_denials: bool) -> None:
        self.rec, self.with_denials = rec, with_denials

    def __call__(self, data: dict[str, Any]) -> None:
        _write_sarif(self.rec, data, self.with_denials)


def keep_findings(rec: Any, findings: bool, with_denials: bool) -> None:
    """findings.sarif at the run's end, with `--findings` or `--sarif-denials` (its denials too)."""
    if (findings or with_denials) and not any(rec.lifecycle.summary_hooks(_Sarif)):
        rec.lifecycle.on_summary(_Sarif(rec, with_denials))


def record_findings(rec: Any, schema: Any) -> None:
    """A --findings run's validated final answer (`schema`: runner/workspace/output_schema.py OutputSchema; the
    run's end, runner/run/assemble.py finish): findings.json, and summary.json `findings` (what the annotations and
    the SARIF file are made from). Nothing for another schema, or no answer."""
    if schema.source != FINDINGS or schema.value is None:
        return
    keep_findings(rec, True, False)  # a resumed or replayed --findings run: its SARIF file too
    kept, dropped = normalise(schema.value, str(rec.workspace))
    # Written before the summary is masked: a secret the model quoted never reaches findings.json, the SARIF file
    # (uploaded to code scanning) or the review, and a fingerprint is of the masked text, the same next run.
    kept = rec.masker.mask_obj(kept)[0]
    for path in dropped:
        rec.emit(RunWarning(code="finding_outside_workspace",
                            message=f"a finding's path {path[:200]!r} is not inside the workspace: left out of "
                                    f"{FINDINGS_FILE}, {SARIF_FILE} and the annotations"))
    write_json(rec.run_dir / FINDINGS_FILE, kept)
    counts = Counter(f["severity"] for f in kept["findings"])
    rec.lifecycle.section("findings", {"count": len(kept["findings"]),
                                       "by_severity": {s: counts.get(s, 0) for s in SEVERITIES},
                                       "dropped": len(dropped), "file": FINDINGS_FILE, "sarif": SARIF_FILE,
                                       "items": kept["findings"]})


def _write_sarif(rec: Any, data: dict[str, Any], with_denials: bool) -> None:
    findings = data.get("findings")
    items = findings.get("items", []) if isinstance(findings, Mapping) else []
    if not isinstance(findings, Mapping) and not with_denials:
        return
    from runner import __version__

    task = str(data.get("task_file") or "-")
    denials = rec.masker.mask_obj(data.get("denials") or [])[0] if with_denials else []  # as the findings
    log = sarif_log(items, denials, version=__version__,
                    category=PurePosixPath(task).stem if task != "-" else "task",
                    task_file=_inside(task, rec) if task != "-" else None, policy_ref=lambda f: _inside(f, rec))
    write_atomic(rec.run_dir / SARIF_FILE, _dump(log))
    data.setdefault("findings", {"count": 0, "by_severity": {s: 0 for s in SEVERITIES}, "dropped": 0,
                                 "file": None, "sarif": SARIF_FILE, "items": []})


def _inside(file: str, rec: Any) -> str | None:
    """A file the record names (a rule's policy file, the task file) as a SARIF location: its path relative to the
    workspace when it is a file there (a shipped policy, named `default`, is not)."""
    root = rec.home or rec.workspace
    relative = normalised_path(portable(file, root), str(root)) if file else None
    return relative if relative is not None and (root / relative).is_file() else None


def _dump(log: Mapping[str, Any]) -> str:
    import json

    return json.dumps(log, indent=2, ensure_ascii=False) + "\n"
