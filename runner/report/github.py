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
import re
import shlex
import uuid
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

# GitHub rejects a step's summary over 1 MiB (all writes of the step together).
SUMMARY_HARD_LIMIT = 1024 * 1024
SUMMARY_LIMIT = SUMMARY_HARD_LIMIT - 24 * 1024  # what we aim for: a margin under the hard limit
MAX_DENIAL_ROWS = 100
MAX_CHANGED_FILES = 300
MAX_CELL_CHARS = 300
MAX_ANSWER_CHARS = 20_000
# GitHub shows at most 10 error annotations per step (50 per job); more is noise.
MAX_DENIAL_ANNOTATIONS = 10
# A job's outputs are capped at 1 MB in total; summary-json gets at most this much.
MAX_SUMMARY_JSON_BYTES = 512 * 1024
MIN_MASK_LENGTH = 4

_STATUS_ICON = {
    "success": "✅", "failed": "❌", "usage_error": "⚠️", "denied": "⛔", "doom_loop": "🔁",
    "budget_exhausted": "⏱️", "model_error": "💥", "interrupted": "🛑",
}
_ERROR_TITLES = {
    "doom_loop": "agent-run: doom loop", "budget_exhausted": "agent-run: budget exhausted",
    "model_error": "agent-run: model error", "failed": "agent-run: failed", "usage_error": "agent-run: usage error",
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


def annotations(summary: Mapping[str, Any], warnings: Iterable[str] = ()) -> list[str]:
    """`::error` per denial (at most MAX_DENIAL_ANNOTATIONS, then one line counting the rest) and for a
    run that ended badly; `::warning` per loop warning and for an interrupted run."""
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
    sandbox = summary.get("sandbox")
    if isinstance(sandbox, Mapping) and not sandbox.get("active") and sandbox.get("mode") == "auto":
        lines.append(command("warning", f"commands ran WITHOUT a sandbox: {sandbox.get('reason')}",
                             title="agent-run: no sandbox"))
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
    """The action's outputs: status, exit-code, run-dir, denials (a count), summary-json (compact)."""
    return {
        "status": str(summary.get("status") or ""),
        "exit-code": str(summary.get("exit_code") if summary.get("exit_code") is not None else ""),
        "run-dir": str(summary.get("run_dir") or ""),
        "denials": str(len(summary.get("denials") or [])),
        "sandbox": sandbox_text(summary.get("sandbox")),
        "events-sha256": str((summary.get("integrity") or {}).get("sha256") or ""),
        "summary-json": compact_summary_json(summary),
        "output": json.dumps(summary["output"], ensure_ascii=False) if summary.get("output") is not None else "",
    }


def sandbox_text(sandbox: Mapping[str, Any] | None) -> str:
    """`bwrap, network none` / `none (bubblewrap (bwrap) is not installed)`: what contained the run."""
    if not sandbox:
        return ""
    if sandbox.get("active"):
        network = sandbox.get("network")
        net = "allow-list " + ", ".join(network["allow"]) if isinstance(network, Mapping) else str(network)
        return f"{sandbox.get('mechanism')}, network {net}"
    return f"none ({sandbox.get('reason')})"


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
    denials = list(summary.get("denials") or [])
    keep = len(denials)
    while True:
        data["denials"] = denials[:keep]
        if keep < len(denials):
            data["denials_omitted"] = len(denials) - keep
        text = dump(data)
        size = len(text.encode())
        if size <= limit or keep == 0:
            break
        keep = min(keep - 1, math.floor(keep * limit / size * 0.95))
        keep = max(keep, 0)
    if len(text.encode()) > limit:  # still too big without denials: the bare facts only
        text = dump({k: summary.get(k) for k in ("run_id", "status", "exit_code", "run_dir")}
                    | {"denials_omitted": len(denials), "truncated": True})
    return text


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


def code_span(text: str, *, in_table: bool = True) -> str:
    """`text` as a Markdown code span: a fence longer than any backtick run in it, padded when it starts
    or ends with a backtick (or with spaces on both sides, which CommonMark would strip), line breaks
    as spaces (what a code span renders anyway; a raw one would end a table row), and in a table `|` as
    `\\|`, which GFM unescapes inside code spans too. (GFM cannot express a backslash right before a
    pipe in a table cell: `a\\|b` shows as `a\\\\|b`.)"""
    text = re.sub(r"\r\n|\r|\n", " ", str(text))
    if not text:
        return "—"
    if in_table:
        text = text.replace("|", "\\|")
    fence = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    pad = ""
    if text[0] == "`" or text[-1] == "`" or (text[0] == " " and text[-1] == " " and text.strip()):
        pad = " "
    return f"{fence}{pad}{text}{pad}{fence}"


_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>|~&!#])")


def md_text(text: str) -> str:
    """Plain text for Markdown: one line, the characters that would format, link or inject HTML escaped."""
    return _MD_SPECIAL.sub(r"\\\1", re.sub(r"\s*[\r\n]+\s*", " ", str(text)))


def _clip(text: str, limit: int = MAX_CELL_CHARS) -> str:
    text = str(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _fenced(text: str, info: str = "") -> str:
    fence = "`" * max(3, max((len(run) for run in re.findall(r"`{3,}", text)), default=0) + 1)
    return f"{fence}{info}\n{text}\n{fence}"


def _number(n: Any) -> str:
    return f"{n:,}" if isinstance(n, int) else ("?" if n is None else str(n))


def step_summary(summary: Mapping[str, Any], limit: int = SUMMARY_LIMIT, *, recent_turns: str | None = None,
                 earlier_turns: int = 0, artifact: str | None = None) -> str:
    """Markdown for $GITHUB_STEP_SUMMARY: the ending, figures, denials with their full commands and replay
    commands, loop and budget findings, the check (a failed one with its output tail, folded), changed
    files, the answer, the last turns of the transcript (`recent_turns`, folded; `earlier_turns` before
    them not shown) and how to get the rest without a link (the `artifact` name and `runs show`).
    At most `limit` UTF-8 bytes: long lists are cut with a note first, then (only for pathological single
    fields) the text itself."""
    status = str(summary.get("status", "?"))
    exit_code = summary.get("exit_code")
    usage = summary.get("usage") or {}
    icon = _STATUS_ICON.get(status)
    out: list[str] = [f"## {icon + ' ' if icon else ''}agent-run: {md_text(status)} (exit {exit_code})", ""]
    if summary.get("reason"):
        out += [f"**Reason:** {md_text(_clip(summary['reason'], 2000))}", ""]

    cost = usage.get("cost_usd")
    duration = summary.get("duration_s")
    rows = [
        ("Status", f"{code_span(status)} (exit {exit_code})"),
        ("Turns", f"{_number(summary.get('turns'))} ({_number(summary.get('tool_calls'))} tool calls)"),
        ("Tokens", f"{_number(usage.get('prompt_tokens'))} prompt ({_number(usage.get('cached_tokens'))} cached), "
                   f"{_number(usage.get('completion_tokens'))} completion"
                   + (f", {_number(usage['total_tokens'])} total" if usage.get("total_tokens") is not None else "")),
        ("Cost", f"${cost:.4f}" if isinstance(cost, int | float) else "unknown (no price for this model)"),
        ("Duration", f"{duration:.1f} s" if isinstance(duration, int | float) else "?"),
        ("Model", code_span(_clip(summary.get("model") or ""))),
        ("Policy", code_span(_clip(summary.get("policy") or ""))),
        ("Sandbox", ("" if (summary.get("sandbox") or {}).get("active", True) else "⚠️ ")
         + md_text(_clip(sandbox_text(summary.get("sandbox")) or "?"))),
        ("Run", code_span(_clip(summary.get("run_id") or ""))),
        ("Integrity", code_span(str((summary.get("integrity") or {}).get("sha256") or "?"))
         + " (check a downloaded run: `agent-run replay RUN_DIR --expect-hash` this)"),
        ("Run dir", code_span(_clip(summary.get("run_dir") or ""))),
    ]
    out += ["| | |", "|---|---|", *(f"| {k} | {v} |" for k, v in rows), ""]

    denials = list(summary.get("denials") or [])
    if denials:
        out += [f"### ⛔ Denied calls ({len(denials)})", "",
                "| call | tool | target | rule | approve and run it |", "|---|---|---|---|---|"]
        for d in denials[:MAX_DENIAL_ROWS]:
            rule = d.get("rule") or {}
            pattern = code_span(_clip(rule["pattern"])) if rule.get("pattern") else "no rule (`ask`)"
            out.append(" | ".join([
                "", code_span(_clip(d.get("call_id") or "")), code_span(_clip(d.get("tool") or "")),
                _target_cell(d), pattern,
                code_span(_clip(d.get("replay") or "", 4 * MAX_CELL_CHARS)), "",
            ]).strip())
        if len(denials) > MAX_DENIAL_ROWS:
            out += ["", f"*… and {len(denials) - MAX_DENIAL_ROWS:,} more denied calls "
                        "(the list is cut here; all of them are in `summary.json`).*"]
        if summary.get("replay"):
            out += ["", "Approve and run every denied call:", "", _fenced(str(summary["replay"]), "sh")]
        out.append("")

    loop = summary.get("loop")
    if isinstance(loop, Mapping):
        out += ["### 🔁 Loop detected", "",
                f"Detector {code_span(str(loop.get('detector')), in_table=False)} reached "
                f"{loop.get('count')} of {loop.get('threshold')} on "
                f"{code_span(_clip(str(loop.get('call') or '')), in_table=False)}.", ""]
    budget = summary.get("budget")
    if isinstance(budget, Mapping):
        used = f", used {budget['used']}" if budget.get("used") is not None else ""
        out += ["### ⏱️ Budget exhausted", "",
                f"Budget {code_span(str(budget.get('name')), in_table=False)}: limit {budget.get('limit')}{used}.", ""]
    check = summary.get("check")
    if isinstance(check, Mapping):
        ok = check.get("ok")
        verdict = "✅ passed" if ok else "❌ failed"
        out += ["### Check", "",
                f"{verdict}: {code_span(_clip(str(check.get('command') or ''), 1000), in_table=False)} "
                f"(exit code {check.get('exit_code')})", ""]
        tail = check.get("output_tail")
        if not ok and isinstance(tail, str) and tail.strip():
            out += ["<details><summary>The check's output (its last lines)</summary>", "",
                    _fenced(_clip(tail, MAX_ANSWER_CHARS), "text"), "", "</details>", ""]
    todos = [t for t in summary.get("todos") or [] if isinstance(t, Mapping)]
    if todos:  # the plan the agent kept (todo): what it meant to do, and what it finished
        marks = {"completed": "☑", "in_progress": "▶"}
        out += [f"### Plan ({sum(t.get('status') == 'completed' for t in todos)}/{len(todos)} completed)", ""]
        out += [f"- {marks.get(str(t.get('status')), '☐')} "
                f"{code_span(_clip(str(t.get('content')), 300), in_table=False)}" for t in todos] + [""]
    changed = summary.get("changed_files")
    if isinstance(changed, list):
        out += [f"### Changed files ({len(changed)})", ""]
        out += [f"- {code_span(_clip(str(p), 1000), in_table=False)}" for p in changed[:MAX_CHANGED_FILES]]
        if not changed:
            out.append("None.")
        if len(changed) > MAX_CHANGED_FILES:
            out.append(f"- *… and {len(changed) - MAX_CHANGED_FILES:,} more (the list is cut here; "
                       "see `changes.patch` in the run directory).*")
        out.append("")
    answer = summary.get("answer")
    if isinstance(answer, str) and answer.strip():
        cut = len(answer) > MAX_ANSWER_CHARS
        out += ["<details><summary>Final answer</summary>", "", _fenced(answer[:MAX_ANSWER_CHARS], "text"),
                *(["", f"*(cut at {MAX_ANSWER_CHARS:,} characters)*"] if cut else []), "", "</details>", ""]
    if recent_turns and recent_turns.strip() and len(recent_turns) <= MAX_TURNS_CHARS:
        before = f" ({earlier_turns} earlier turn(s) not shown)" if earlier_turns else ""
        out += [f"<details><summary>The last turns of the transcript{before}</summary>", "",
                recent_turns.strip("\n"), "", "</details>", ""]
    out += _the_rest(summary, artifact)
    return _cap("\n".join(out) + "\n", limit)


MAX_TURNS_CHARS = 60_000


def _target_cell(d: Mapping[str, Any]) -> str:
    """The denied target and, when it says more, the call's full command (a target is one simple command
    of a compound one: `echo x && rm -rf build` is denied on `rm -rf build`)."""
    cell = code_span(_clip(d.get("target") or ""))
    command = d.get("command")
    if isinstance(command, str) and command.strip() and command not in str(d.get("target") or ""):
        cell += f"<br>in {code_span(_clip(command, 4 * MAX_CELL_CHARS))}"
    return cell


def _the_rest(summary: Mapping[str, Any], artifact: str | None) -> list[str]:
    """A link-free way to the whole run: the artifact that holds the run directory, and the command."""
    if not summary.get("run_id"):
        return []
    where = (f"the artifact {code_span(artifact, in_table=False)}" if artifact
             else "the run directory artifact")
    run = str(summary["run_id"])
    return ["### The whole run", "",
            f"Download {where} and, where you unpacked it (its run directory is "
            f"{code_span(run, in_table=False)}), read the transcript:", "",
            _fenced(f"agent-run runs show {shlex.quote(run)} --transcript", "sh"), ""]


def _cap(text: str, limit: int) -> str:
    data = text.encode()
    if len(data) <= limit:
        return text
    note = "\n\n*… the summary is cut here (GitHub's 1 MiB limit); the run directory has everything.*\n"
    room = max(0, limit - len(note.encode()))
    head = data[:room].decode("utf-8", errors="ignore")
    head = head[: head.rfind("\n") + 1] if "\n" in head else ""  # never leave half a table row
    return head + note if len((head + note).encode()) <= limit else ""


# -- the reporter -------------------------------------------------------------------------------


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

    @property
    def active(self) -> bool:
        return self.environ.get("GITHUB_ACTIONS") == "true"

    def start(self, secrets: Iterable[str | None] = ()) -> list[str]:
        """Lines to print (stdout, flushed) before the run: masks for `secrets`, then `::stop-commands::`."""
        if not self.active:
            return []
        before, self._resume = stop_commands()
        return [*mask(secrets), before]

    def finish(self, summary: Mapping[str, Any], warnings: Iterable[str] = ()) -> list[str]:
        """Append the step summary and the outputs to the files GitHub named; return the lines to print on
        stdout: the resume-commands line (when `start` stopped them), then the annotations."""
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
                                             artifact=self.environ.get("AGENT_RUN_ARTIFACT_NAME") or None))
        path = self.environ.get("GITHUB_OUTPUT")
        if path:
            _append(Path(path), outputs_block(output_values(summary)))
        lines = [self._resume] if self._resume else []
        self._resume = None
        return lines + annotations(summary, warnings)


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
    from runner.report.transcript import last_turns  # transcript imports this module

    for n in range(RECENT_TURNS, 0, -1):
        text, earlier = last_turns(markdown, n, shift=2)
        if len(text) <= MAX_TURNS_CHARS:
            return text or None, earlier
    return None, 0


def _append(path: Path, text: str) -> None:
    with path.open("a", encoding="utf-8", newline="\n") as f:
        f.write(text)
