"""GitHub Actions: the job summary, annotations, step outputs and workflow-command hygiene.

Everything here is a pure function of its arguments (randomness aside: delimiters and
stop tokens are uuid4s) so it can be tested without a runner. `GitHubReporter` is the
only part that touches files, and only the ones its `environ` names.

Workflow commands (https://docs.github.com/actions/reference/workflow-commands-for-github-actions)
are lines on stdout *or* stderr starting with `::`. Anything the model or a tool wrote
that reaches either stream could issue one, so model-derived text is printed between
`::stop-commands::TOKEN` and `::TOKEN::` (see `stop_commands`).
"""

from __future__ import annotations

import json
import math
import sys
import uuid
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from runner.report.markdown import last_turns
from runner.report.step_summary import (
    MAX_TURNS_CHARS,
    SUMMARY_LIMIT,
    chain_ids,
    sandbox_blocked,
    sandbox_text,
    step_summary,
)

# GitHub shows at most 10 error annotations per step (50 per job); more is noise.
MAX_DENIAL_ANNOTATIONS = 10
# A job's outputs are capped at 1 MB in total; summary-json gets at most this much.
MAX_SUMMARY_JSON_BYTES = 512 * 1024
# ... and `output` (a structured answer) at most this much: with summary-json and the small values, under 1 MB.
# A larger output is left empty (a cut JSON value would be a wrong one) and an annotation says where it is.
MAX_OUTPUT_BYTES = 384 * 1024
MIN_MASK_LENGTH = 4

_ERROR_TITLES = {
    "doom_loop": "agent-run: doom loop", "budget_exhausted": "agent-run: budget exhausted",
    "model_error": "agent-run: model error", "failed": "agent-run: failed", "usage_error": "agent-run: usage error",
    "land_failed": "agent-run: landing failed",
}


# -- workflow-command escaping ------------------------------------------------------------------


def escape_data(text: str) -> str:
    """A workflow command's message: `%`, CR and LF percent-encoded (the runner decodes them)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A workflow command's property value: as a message, plus `:` and `,` (they delimit properties)."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(name: str, message: str = "", **properties: str | int | None) -> str:
    """One workflow-command line: `::name k=v,k=v::message`, every part escaped."""
    props = ",".join(f"{k}={escape_property(str(v))}" for k, v in properties.items() if v is not None)
    return f"::{name}{' ' + props if props else ''}::{escape_data(message)}"


def _fresh_token(prefix: str, avoid: Iterable[str]) -> str:
    avoid = list(avoid)
    while True:  # a uuid4 collides with nothing in practice; the loop makes it a guarantee
        token = f"{prefix}{uuid.uuid4()}"
        if not any(token in text for text in avoid):
            return token


def on_github(environ: Mapping[str, str]) -> bool:
    """Whether `environ` is a GitHub Actions job's: where workflow commands are read from the output."""
    return environ.get("GITHUB_ACTIONS") == "true"


def stop_commands(text: str = "") -> tuple[str, str]:
    """(before, after): print `before`, then text that must not issue workflow commands (a model's
    answer, tool output), then `after`. The token never occurs in `text`, so the text cannot resume
    command processing itself. While stopped the runner ignores *all* commands, annotations included:
    print them after `after`."""
    token = _fresh_token("agent-run-", [text])
    return f"::stop-commands::{token}", f"::{token}::"


def mask(values: Iterable[str | None]) -> list[str]:
    """`::add-mask::` lines for secrets, one per line of a multi-line value (the runner masks line by
    line). Empty and short values (< 4 characters) are skipped: masking `abc` would star out every
    `abc` in the log and hides nothing worth hiding."""
    lines: list[str] = []
    seen: set[str] = set()
    for value in values:
        for part in (value or "").splitlines():
            part = part.strip()
            if len(part) >= MIN_MASK_LENGTH and part not in seen:
                seen.add(part)
                lines.append(command("add-mask", part))
    return lines


def group(title: str) -> str:
    return command("group", title)


def endgroup() -> str:
    return "::endgroup::"


# -- annotations --------------------------------------------------------------------------------


def annotation_lines(summary: Mapping[str, Any], warnings: Iterable[str] = ()) -> list[str]:
    """`::error` per denial (at most MAX_DENIAL_ANNOTATIONS, then one line counting the rest) and for a
    run that ended badly; `::warning` per loop warning, per write the sandbox refused and for an interrupted run."""
    lines: list[str] = []
    denials = list(summary.get("denials") or [])
    for d in denials[:MAX_DENIAL_ANNOTATIONS]:
        rule = d.get("rule") or {}
        why = (f"by rule {rule.get('pattern')} ({_rule_place(rule)})" if rule.get("pattern")
               else "no rule allows it (headless `ask` is a deny)")
        msg = f"{d.get('tool', '?')} on {d.get('target', '?')} was denied: {why}."
        if d.get("replay"):
            msg += f"\nApprove and run it: {d['replay']}"
        lines.append(command("error", msg, title=f"agent-run: denied {d.get('tool', 'call')}"))
    if len(denials) > MAX_DENIAL_ANNOTATIONS:
        rest = len(denials) - MAX_DENIAL_ANNOTATIONS
        more = f"{rest} more denied call(s); see the job summary or summary.json"
        if summary.get("replay"):
            more += f"\nApprove them all: {summary['replay']}"
        lines.append(command("error", more, title="agent-run: more denials"))

    lines += _finding_annotations(summary)
    output = _output_json(summary)
    if output is not None and len(output.encode()) > MAX_OUTPUT_BYTES:
        lines.append(command("warning", f"The structured output is {len(output.encode()):,} bytes, over the "
                             f"{MAX_OUTPUT_BYTES:,} a step output may take here (a job's outputs share 1 MB): the "
                             "output `output` is empty; the value is output.json in the run directory.",
                             title="agent-run: output too large for a step output"))
    status = str(summary.get("status", ""))
    if status in _ERROR_TITLES:
        lines.append(command("error", _ending(summary), title=_ERROR_TITLES[status]))
    elif status == "interrupted":
        lines.append(command("warning", _ending(summary), title="agent-run: interrupted"))
    check = summary.get("check")
    if isinstance(check, Mapping) and check.get("ok") is False and status not in _ERROR_TITLES:
        lines.append(command("error", f"the check {check.get('command')} failed (exit code {check.get('exit_code')})",
                             title="agent-run: check failed"))
    for w in warnings:
        lines.append(command("warning", w, title="agent-run: loop warning"))
    for b in sandbox_blocked(summary):
        lines.append(command("warning", b + ". Commits, branches and pushes are the runner's (--land): the sandbox "
                             "keeps .git read-only.", title="agent-run: blocked by the sandbox"))
    sandbox = summary.get("sandbox")
    if isinstance(sandbox, Mapping) and not sandbox.get("active") and sandbox.get("mode") == "auto":
        lines.append(command("warning", f"commands ran WITHOUT a sandbox: {sandbox.get('reason')}",
                             title="agent-run: no sandbox"))
    return lines


# A finding's severity as the workflow command that shows it (SARIF's `note` is GitHub's `notice`).
_FINDING_COMMANDS = {"error": "error", "warning": "warning", "note": "notice"}


def _finding_annotations(summary: Mapping[str, Any]) -> list[str]:
    """--findings: one annotation per finding at its file and lines, most severe first, at most
    MAX_DENIAL_ANNOTATIONS of each type (what GitHub shows per step)."""
    findings = summary.get("findings")
    items = findings.get("items") if isinstance(findings, Mapping) else None
    lines: list[str] = []
    shown: dict[str, int] = {}
    for f in items if isinstance(items, list) else []:
        name = _FINDING_COMMANDS.get(str(f.get("severity")), "notice")
        if shown.get(name, 0) >= MAX_DENIAL_ANNOTATIONS:
            continue
        shown[name] = shown.get(name, 0) + 1
        lines.append(command(name, str(f.get("message") or f.get("title") or ""), file=f.get("path"),
                             line=f.get("line"), endLine=f.get("end_line"), title=str(f.get("title") or "")[:200]))
    return lines


def _rule_place(rule: Mapping[str, Any]) -> str:
    where = str(rule.get("file") or "?")
    if rule.get("line") is not None:
        where += f":{rule['line']}"
    elif rule.get("index") is not None:
        where += f" rule #{rule['index']}"
    return where


def _ending(summary: Mapping[str, Any]) -> str:
    """One message for how the run ended: the reason, then the loop/budget figures."""
    parts = [f"{summary.get('status')} (exit {summary.get('exit_code')})"]
    if summary.get("reason"):
        parts[0] += f": {summary['reason']}"
    loop = summary.get("loop")
    if isinstance(loop, Mapping):
        parts.append(f"loop detector {loop.get('detector')}: {loop.get('count')} of {loop.get('threshold')}; "
                     f"call: {loop.get('call')}")
    budget = summary.get("budget")
    if isinstance(budget, Mapping):
        parts.append(f"budget {budget.get('name')}: limit {budget.get('limit')}"
                     + (f", used {budget['used']}" if budget.get("used") is not None else ""))
    if summary.get("run_dir"):
        parts.append(f"run dir: {summary['run_dir']}")
    return "\n".join(parts)


# -- step outputs -------------------------------------------------------------------------------


def output_values(summary: Mapping[str, Any]) -> dict[str, str]:
    """The action's outputs: status, exit-code, run-dir, run-dirs (an auto-resume chain's run directories, one a
    line, the last run's last: what the artifact uploads; else run-dir), denials (a count), summary-json (compact);
    with --land, commit, branch and pull-request-url."""
    land = summary.get("land")
    landed = {} if not isinstance(land, Mapping) else {
        "commit": str(land.get("commit") or ""), "branch": str(land.get("branch") or "") if land.get("commit") else "",
        "pull-request-url": str((land.get("pull_request") or {}).get("url") or "")}
    return {**landed,
        "status": str(summary.get("status") or ""),
        "exit-code": str(summary.get("exit_code") if summary.get("exit_code") is not None else ""),
        "run-dir": str(summary.get("run_dir") or ""),
        "run-dirs": _run_dirs(summary),
        "denials": str(len(summary.get("denials") or [])),
        "sandbox": sandbox_text(summary.get("sandbox")),
        "events-sha256": str((summary.get("integrity") or {}).get("sha256") or ""),
        "summary-json": compact_summary_json(summary),
        "output": _output_value(summary),
    }


def _run_dirs(summary: Mapping[str, Any]) -> str:
    run_dir = str(summary.get("run_dir") or "")
    chain = chain_ids(summary) if run_dir else []
    return "\n".join(str(Path(run_dir).parent / run_id) for run_id in chain) if chain else run_dir


def _output_value(summary: Mapping[str, Any]) -> str:
    text = _output_json(summary)
    return text if text is not None and len(text.encode()) <= MAX_OUTPUT_BYTES else ""


def _output_json(summary: Mapping[str, Any]) -> str | None:
    return json.dumps(summary["output"], ensure_ascii=False) if summary.get("output") is not None else None


def compact_summary_json(summary: Mapping[str, Any], limit: int = MAX_SUMMARY_JSON_BYTES) -> str:
    """summary.json on one line. Over `limit` bytes (a job's outputs share 1 MB), the answer is cut and
    then denials are dropped from the end, with `denials_omitted` / `answer_truncated` saying so:
    still valid JSON, still the right status and counts."""
    def dump(data: Mapping[str, Any]) -> str:
        return json.dumps(data, separators=(",", ":"), ensure_ascii=False, sort_keys=True, default=str)

    text = dump(summary)
    if len(text.encode()) <= limit:
        return text
    data = dict(summary)
    if isinstance(data.get("answer"), str) and len(data["answer"]) > 1000:
        data["answer"] = data["answer"][:1000]
        data["answer_truncated"] = True
    if data.get("output") is not None and len(dump({"output": data["output"]}).encode()) > limit // 2:
        data["output"] = None  # the `output` output and output.json have it (or say where it is)
        data["output_omitted"] = True
    denials = list(summary.get("denials") or [])
    text = _drop_from_end(data, "denials", denials, "denials_omitted", limit, dump)
    if len(text.encode()) > limit:  # still too big without denials: the bare facts only
        text = dump({k: summary.get(k) for k in ("run_id", "status", "exit_code", "run_dir")}
                    | {"denials_omitted": len(denials), "truncated": True})
    return text


MAX_RESULTS_BYTES = 900 * 1024  # batch's one output, `results`, under the job's 1 MB with room to spare


def compact_results_json(result: Mapping[str, Any], limit: int = MAX_RESULTS_BYTES) -> str:
    """batch.json on one line for the step output `results`. Over `limit` bytes, each task's reason is cut to
    200 characters (`reasons_cut`), then tasks are dropped from the end (`tasks_omitted`): still valid JSON,
    still the batch's exit code; batch.json itself keeps everything."""
    def dump(data: Mapping[str, Any]) -> str:
        return json.dumps(data, separators=(",", ":"), sort_keys=True, ensure_ascii=False)

    text = dump(result)
    if len(text.encode()) <= limit:
        return text
    tasks = [{**t, "reason": t["reason"][:200]} if isinstance(t.get("reason"), str) else t
             for t in result.get("tasks") or []]
    data = {**result, "tasks": tasks, "reasons_cut": True}
    return _drop_from_end(data, "tasks", tasks, "tasks_omitted", limit, dump)


def _drop_from_end(data: dict[str, Any], key: str, items: list[Any], omitted: str, limit: int,
                   dump: Callable[[Mapping[str, Any]], str]) -> str:
    """`data` dumped with `data[key]` the most of `items` that fit in `limit` bytes, dropped from the end
    (`data[omitted]` saying how many); with none of them if even that does not fit."""
    keep = len(items)
    while True:
        data[key] = items[:keep]
        if keep < len(items):
            data[omitted] = len(items) - keep
        text = dump(data)
        size = len(text.encode())
        if size <= limit or keep == 0:
            return text
        keep = max(0, min(keep - 1, math.floor(keep * limit / size * 0.95)))


def outputs_block(values: Mapping[str, str], delimiter: str | None = None) -> str:
    """Text to append to $GITHUB_OUTPUT: every value as `name<<DELIM`, value, `DELIM`, whatever it
    contains. The delimiter is `ghadelimiter_<uuid4>` and never occurs in any value (the runner ends a
    value at the first line equal to it); an explicit one that does is refused."""
    for name in values:
        if not name or "<<" in name or "=" in name or "\n" in name or "\r" in name:
            raise ValueError(f"invalid output name {name!r}")
    texts = [str(v) for v in values.values()]
    if delimiter is None:
        delimiter = _fresh_token("ghadelimiter_", texts)
    elif not delimiter or any(delimiter in t for t in texts) or "\n" in delimiter or "\r" in delimiter:
        raise ValueError("the output delimiter must be non-empty, one line, and occur in no value")
    out = []
    for name, value in values.items():
        out.append(f"{name}<<{delimiter}\n{value}\n{delimiter}\n")
    return "".join(out)


# -- the step summary (Markdown) ----------------------------------------------------------------


class GitHubReporter:
    """GitHub Actions integration for one run, driven by an environ mapping (os.environ in the CLI).

    Usage (the CLI): `lines = reporter.start(secrets)`, print them, run, print the model-derived
    output, then print `reporter.finish(summary, warnings)`. `start` stops command processing so that
    nothing the model or a tool writes to stdout/stderr during the run can issue a workflow command;
    `finish` resumes it first thing, then annotates.
    """

    def __init__(self, environ: Mapping[str, str]) -> None:
        self.environ = environ
        self._resume: str | None = None
        self._masked: set[str] = set()  # the `::add-mask::` lines `start` printed

    @property
    def active(self) -> bool:
        return on_github(self.environ)

    def start(self, secrets: Iterable[str | None] = ()) -> list[str]:
        """Lines to print (stdout, flushed) before the run: masks for `secrets`, then `::stop-commands::`."""
        if not self.active:
            return []
        before, self._resume = stop_commands()
        masks = mask(secrets)
        self._masked = set(masks)
        return [*masks, before]

    def finish(self, summary: Mapping[str, Any], warnings: Iterable[str] = (),
               secrets: Iterable[str | None] = ()) -> list[str]:
        """Append the step summary and the outputs to the files GitHub named; return the lines to print on
        stdout: the resume-commands line (when `start` stopped them), masks for the `secrets` the run learned
        that `start` did not mask (GitHub ignores a mask while commands are stopped: from here on, the rest of the
        job's log), then the annotations."""
        if not self.active:
            return []
        path = self.environ.get("GITHUB_STEP_SUMMARY")
        if path:
            target = Path(path)
            used = target.stat().st_size if target.exists() else 0
            room = SUMMARY_LIMIT - used
            if room > 1024:
                recent, earlier = _recent_turns(summary)
                _append(target, step_summary(summary, limit=room, recent_turns=recent, earlier_turns=earlier,
                                             artifact=self.environ.get("AGENT_RUN_ARTIFACT_NAME") or None,
                                             github_run=self.environ.get("GITHUB_RUN_ID") or None))
        path = self.environ.get("GITHUB_OUTPUT")
        if path:
            _append(Path(path), outputs_block(output_values(summary)))
        lines = [self._resume] if self._resume else []
        self._resume = None
        lines += [line for line in mask(secrets) if line not in self._masked]
        return lines + annotation_lines(summary, warnings)


RECENT_TURNS = 3


def _recent_turns(summary: Mapping[str, Any]) -> tuple[str | None, int]:
    """The last RECENT_TURNS turns of the run's transcript.md (written, masked, before the reporter
    finishes), headings demoted to sit under the summary's; fewer when they are too long to fold in."""
    run_dir = summary.get("run_dir")
    if not run_dir:
        return None, 0
    try:
        markdown = (Path(str(run_dir)) / "transcript.md").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None, 0

    for n in range(RECENT_TURNS, 0, -1):
        text, earlier = last_turns(markdown, n, shift=2)
        if len(text) <= MAX_TURNS_CHARS:
            return text or None, earlier
    return None, 0


def append_step_summary(environ: Mapping[str, str], text: str) -> None:
    """Append `text` to the job's step summary when GitHub named one; a file that cannot be written is said on
    stderr (the step's outcome is the run's, never a traceback)."""
    path = environ.get("GITHUB_STEP_SUMMARY")
    if not path:
        return
    try:
        _append(Path(path), text)
    except OSError as exc:
        print(f"agent-run: warning: cannot write the step summary {path}: {exc.strerror or exc}", file=sys.stderr)


def _append(path: Path, text: str) -> None:
    with path.open("a", encoding="utf-8", newline="\n") as f:
        f.write(text)
