"""The job summary ($GITHUB_STEP_SUMMARY) of a run, as Markdown: the ending, its figures, denials with the
commands that approve them, findings (loop, budget, check), the plan and changed files, the answer and
the last turns, and how to get the rest. A pure function of summary.json; capped under GitHub's 1 MiB.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from typing import Any

from runner.record.commands import WHERE, command
from runner.report.markdown import MAX_CELL_CHARS, clip, code_span, fenced, md_text

# GitHub rejects a step's summary over 1 MiB (all writes of the step together).
SUMMARY_HARD_LIMIT = 1024 * 1024
SUMMARY_LIMIT = SUMMARY_HARD_LIMIT - 24 * 1024  # what we aim for: a margin under the hard limit
MAX_DENIAL_ROWS = 100
MAX_CHANGED_FILES = 300
MAX_ANSWER_CHARS = 20_000

STATUS_ICON = {
    "success": "✅", "failed": "❌", "usage_error": "⚠️", "denied": "⛔", "doom_loop": "🔁",
    "budget_exhausted": "⏱️", "model_error": "💥", "interrupted": "🛑", "land_failed": "📤",
}


def _number(n: Any) -> str:
    return f"{n:,}" if isinstance(n, int) else ("?" if n is None else str(n))


def step_summary(summary: Mapping[str, Any], limit: int = SUMMARY_LIMIT, *, recent_turns: str | None = None,
                 earlier_turns: int = 0, artifact: str | None = None, github_run: str | None = None) -> str:
    """Markdown for $GITHUB_STEP_SUMMARY: the ending, figures, denials with their full commands and replay
    commands, loop and budget findings, the check (a failed one with its output tail, folded), changed
    files, the answer, the last turns of the transcript (`recent_turns`, folded; `earlier_turns` before
    them not shown) and how to get the rest without a link: the `artifact` of the workflow run `github_run`
    (GITHUB_RUN_ID) fetched, and the commands that read it.
    At most `limit` UTF-8 bytes: long lists are cut with a note first, then (only for pathological single
    fields) the text itself."""
    status = str(summary.get("status", "?"))
    exit_code = summary.get("exit_code")
    usage = summary.get("usage") or {}
    icon = STATUS_ICON.get(status)
    out: list[str] = [f"## {icon + ' ' if icon else ''}agent-run: {md_text(status)} (exit {exit_code})", ""]
    if summary.get("reason"):
        out += [f"**Reason:** {md_text(clip(summary['reason'], 2000))}", ""]
    out += _figures(summary, status, exit_code, usage)
    out += _denials(summary)
    out += _findings(summary)
    out += _plan_and_changes(summary)
    out += _answer_and_turns(summary, recent_turns, earlier_turns)
    out += _the_rest(summary, artifact, github_run)
    return _cap("\n".join(out) + "\n", limit)


def _figures(summary: Mapping[str, Any], status: str, exit_code: Any, usage: Mapping[str, Any]) -> list[str]:
    """The table of figures: status, turns, tokens, cost, duration, model, policy, sandbox, run, integrity."""
    cost = usage.get("cost_usd")
    duration = summary.get("duration_s")
    rows = [
        ("Status", f"{code_span(status)} (exit {exit_code})"),
        ("Turns", f"{_number(summary.get('turns'))} ({_number(summary.get('tool_calls'))} tool calls)"),
        ("Tokens", f"{_number(usage.get('prompt_tokens'))} prompt ({_number(usage.get('cached_tokens'))} cached), "
                   f"{_number(usage.get('completion_tokens'))} completion"
                   + (f", {_number(usage['total_tokens'])} total" if usage.get("total_tokens") is not None else "")),
        ("Cost", (f"${cost:.4f}" + _price_source(usage)) if isinstance(cost, int | float)
         else "unknown (no price for this model)"),
        ("Duration", f"{duration:.1f} s" if isinstance(duration, int | float) else "?"),
        ("Model", code_span(clip(summary.get("model") or "")) + _models_used(summary)),
        ("Policy", code_span(clip(summary.get("policy") or ""))),
        ("Sandbox", ("" if (summary.get("sandbox") or {}).get("active", True) else "⚠️ ")
         + md_text(clip(sandbox_text(summary.get("sandbox")) or "?"))),
        ("Run", code_span(clip(summary.get("run_id") or ""))),
        ("Integrity", code_span(str((summary.get("integrity") or {}).get("sha256") or "?"))
         + " (check a downloaded run: `agent-run replay RUN_DIR --expect-hash` this)"),
        ("Run dir", code_span(clip(summary.get("run_dir") or ""))),
    ]
    return ["| | |", "|---|---|", *(f"| {k} | {v} |" for k, v in rows), ""]


def _models_used(summary: Mapping[str, Any]) -> str:
    """The models that served the run besides the requested one (a fallback, a subagent profile's)."""
    used = [m for m in summary.get("models_used") or [] if isinstance(m, str)]
    if used in ([], [summary.get("model")]):
        return ""
    return " — models used: " + ", ".join(code_span(clip(m)) for m in used) + (
        " (a fallback: the prompt cache started over)" if any("started over" in str(w)
                                                               for w in summary.get("warnings") or []) else "")


def _price_source(usage: Mapping[str, Any]) -> str:
    """Where the price came from (`policy`, `genai-prices 0.2.3`): a reviewer weighs a cost by its source."""
    source = usage.get("price_source")
    return f" (prices: {md_text(clip(str(source), 100))})" if isinstance(source, str) and source else ""


def _denials(summary: Mapping[str, Any]) -> list[str]:
    """Denied calls, each with its full command and the command that approves it."""
    denials = list(summary.get("denials") or [])
    if not denials:
        return []
    out = [f"### ⛔ Denied calls ({len(denials)})", "", f"Commands are {WHERE} (their paths are relative to it).", "",
            "| call | tool | target | rule | approve and run it |", "|---|---|---|---|---|"]
    for d in denials[:MAX_DENIAL_ROWS]:
        rule = d.get("rule") or {}
        pattern = code_span(clip(rule["pattern"])) if rule.get("pattern") else "no rule (`ask`)"
        out.append(" | ".join([
            "", code_span(clip(d.get("call_id") or "")), code_span(clip(d.get("tool") or "")),
            _target_cell(d), pattern,
            code_span(clip(d.get("replay") or "", 4 * MAX_CELL_CHARS)), "",
        ]).strip())
    if len(denials) > MAX_DENIAL_ROWS:
        out += ["", f"*… and {len(denials) - MAX_DENIAL_ROWS:,} more denied calls "
                    "(the list is cut here; all of them are in `summary.json`).*"]
    if summary.get("replay"):
        out += ["", "Approve and run every denied call:", "", fenced(str(summary["replay"]), "sh")]
    out.append("")
    return out


def _findings(summary: Mapping[str, Any]) -> list[str]:
    """What ended or judged the run: a loop, a budget, writes the sandbox refused, the task's check."""
    out: list[str] = []
    loop = summary.get("loop")
    if isinstance(loop, Mapping):
        out += ["### 🔁 Loop detected", "",
                f"Detector {code_span(str(loop.get('detector')), in_table=False)} reached "
                f"{loop.get('count')} of {loop.get('threshold')} on "
                f"{code_span(clip(str(loop.get('call') or '')), in_table=False)}.", ""]
    budget = summary.get("budget")
    if isinstance(budget, Mapping):
        used = f", used {budget['used']}" if budget.get("used") is not None else ""
        out += ["### ⏱️ Budget exhausted", "",
                f"Budget {code_span(str(budget.get('name')), in_table=False)}: limit {budget.get('limit')}{used}.", ""]
    blocked = sandbox_blocked(summary)
    if blocked:
        out += [f"### 🔒 Blocked by the sandbox ({len(blocked)})", "",
                *(f"- {md_text(clip(b, 1000))}" for b in blocked[:MAX_DENIAL_ROWS]), "",
                "Commits, branches and pushes are the runner's (`--land`), never a command's: the sandbox keeps "
                "`.git` read-only.", ""]
    check = summary.get("check")
    if isinstance(check, Mapping):
        ok = check.get("ok")
        verdict = "✅ passed" if ok else "❌ failed"
        out += ["### Check", "",
                f"{verdict}: {code_span(clip(str(check.get('command') or ''), 1000), in_table=False)} "
                f"(exit code {check.get('exit_code')})", ""]
        tail = check.get("output_tail")
        if not ok and isinstance(tail, str) and tail.strip():
            out += ["<details><summary>The check's output (its last lines)</summary>", "",
                    fenced(clip(tail, MAX_ANSWER_CHARS), "text"), "", "</details>", ""]
        if not ok and isinstance(check.get("output_path"), str):
            out += [f"Its whole output: {code_span(clip(check['output_path']), in_table=False)} in the run "
                    "directory.", ""]
    return out


def sandbox_blocked(summary: Mapping[str, Any]) -> list[str]:
    """The writes the sandbox refused to a policy-allowed command (the `sandbox_blocked` warnings), each as
    `call ID: PATH is on a read-only mount of the sandbox (MOUNT); the command failed (exit code N)`."""
    prefix = "sandbox_blocked: "
    warnings = summary.get("warnings") or []
    return [w.removeprefix(prefix) for w in warnings if isinstance(w, str) and w.startswith(prefix)]


def _plan_and_changes(summary: Mapping[str, Any]) -> list[str]:
    """The agent's plan (todo) and the files it changed."""
    out: list[str] = []
    todos = [t for t in summary.get("todos") or [] if isinstance(t, Mapping)]
    if todos:  # the plan the agent kept (todo): what it meant to do, and what it finished
        marks = {"completed": "☑", "in_progress": "▶"}
        out += [f"### Plan ({sum(t.get('status') == 'completed' for t in todos)}/{len(todos)} completed)", ""]
        out += [f"- {marks.get(str(t.get('status')), '☐')} "
                f"{code_span(clip(str(t.get('content')), 300), in_table=False)}" for t in todos] + [""]
    changed = summary.get("changed_files")
    if isinstance(changed, list):
        out += [f"### Changed files ({len(changed)})", ""]
        out += [f"- {code_span(clip(str(p), 1000), in_table=False)}" for p in changed[:MAX_CHANGED_FILES]]
        if not changed:
            out.append("None.")
        if len(changed) > MAX_CHANGED_FILES:
            out.append(f"- *… and {len(changed) - MAX_CHANGED_FILES:,} more (the list is cut here; "
                       "see `changes.patch` in the run directory).*")
        out.append("")
    return out + land_lines(summary.get("land"))


def land_lines(land: object) -> list[str]:
    """--land: what the runner landed (the commit, the branch, the pull request), or why nothing."""
    if not isinstance(land, Mapping):
        return []
    out = [f"### Landed ({md_text(land.get('mode'))})" if land.get("landed") else
           f"### Not landed ({md_text(land.get('mode'))})", ""]
    if land.get("commit"):
        out.append(f"- Commit {code_span(str(land['commit'])[:12], in_table=False)} on "
                   f"{code_span(clip(str(land.get('branch') or '')), in_table=False)}")
    pr = land.get("pull_request")
    if isinstance(pr, Mapping) and pr.get("url"):
        out.append(f"- Pull request [#{pr.get('number')}]({pr['url']})")
    if land.get("reason"):
        out.append(f"- {md_text(clip(str(land['reason']), 2000))}")
    return [*out, ""]


def _answer_and_turns(summary: Mapping[str, Any], recent_turns: str | None, earlier_turns: int) -> list[str]:
    """The final answer and the last turns of the transcript, folded."""
    out: list[str] = []
    answer = summary.get("answer")
    if isinstance(answer, str) and answer.strip():
        cut = len(answer) > MAX_ANSWER_CHARS
        out += ["<details><summary>Final answer</summary>", "", fenced(answer[:MAX_ANSWER_CHARS], "text"),
                *(["", f"*(cut at {MAX_ANSWER_CHARS:,} characters)*"] if cut else []), "", "</details>", ""]
    if recent_turns and recent_turns.strip() and len(recent_turns) <= MAX_TURNS_CHARS:
        before = f" ({earlier_turns} earlier turn(s) not shown)" if earlier_turns else ""
        out += [f"<details><summary>The last turns of the transcript{before}</summary>", "",
                recent_turns.strip("\n"), "", "</details>", ""]
    return out


MAX_TURNS_CHARS = 60_000


def _target_cell(d: Mapping[str, Any]) -> str:
    """The denied target and, when it says more, the call's full command (a target is one simple command
    of a compound one: `echo x && rm -rf build` is denied on `rm -rf build`)."""
    cell = code_span(clip(d.get("target") or ""))
    command = d.get("command")
    if isinstance(command, str) and command.strip() and command not in str(d.get("target") or ""):
        cell += f"<br>in {code_span(clip(command, 4 * MAX_CELL_CHARS))}"
    return cell


def chain_ids(summary: Mapping[str, Any]) -> list[str]:
    """The run ids of the auto-resume chain this run ended (summary `auto_resume.chain`: the first … this one), or
    [] for a run alone. The action's artifact then holds each run as a directory of its own (`run-dirs`)."""
    section = summary.get("auto_resume")
    chain = section.get("chain") if isinstance(section, Mapping) else None
    ids = [str(i) for i in chain] if isinstance(chain, list) else []
    # Names of sibling directories, nothing else: a summary is read back as data.
    return ids if len(ids) > 1 and all(_RUN_NAME.fullmatch(i) for i in ids) else []


_RUN_NAME = re.compile(r"[0-9A-Za-z_-][0-9A-Za-z._-]*")


def _the_rest(summary: Mapping[str, Any], artifact: str | None, github_run: str | None) -> list[str]:
    """A link-free way to the whole run: how to get the artifact that holds the run directory (the GitHub CLI, or
    a browser download unzipped), then the commands that read, replay and resume it. upload-artifact stores the
    run directory's files at the artifact's root; both ways unpack them into `.agent-run/runs/ARTIFACT` of a
    checkout, where a replay or a resume puts its own run directory beside it (next to the run it continues: at
    the checkout's root, that root would become a runs directory, read-only to the replayed commands). An
    auto-resume chain's artifact holds each of its runs as a directory (the runs directory's entries): the
    commands name the last, in `.agent-run/runs/ARTIFACT/RUN_ID`."""
    if not summary.get("run_id"):
        return []
    if not artifact:
        return ["### The whole run", "",
                f"Download the run directory artifact (its run is {code_span(str(summary['run_id']), in_table=False)}"
                "), unpack it into `.agent-run/runs/NAME` of a checkout and, from the checkout's root, read the "
                "transcript:", "", fenced(command("runs", "show", ".agent-run/runs/NAME", "--transcript"), "sh"), ""]
    into = f".agent-run/runs/{artifact}"
    chain = chain_ids(summary)
    where = f"{into}/{summary['run_id']}" if chain else into
    fetch = shlex.join(["gh", "run", "download", github_run or "RUN_ID", "-n", artifact, "-D", into])
    read = [command("runs", "show", where, "--transcript"), command("runs", "show", where, "--audit")]
    if summary.get("denials"):
        read.append(command("replay", where, "--approve"))
    # What the run's own resume repeats after its directory (its --skills, --agents: engine/recorder.commands_for).
    read.append(command("resume", where, *shlex.split(str(summary.get("resume") or ""))[3:]))
    held = (f"The {len(chain)} runs of the auto-resume chain are the artifact {code_span(artifact, in_table=False)}"
            f", a directory each (this one, the last: {code_span(str(summary['run_id']), in_table=False)})"
            if chain else f"The run directory is the artifact {code_span(artifact, in_table=False)}")
    return ["### The whole run", "",
            f"{held}. From the root of a checkout, get it with the GitHub CLI:", "", fenced(fetch, "sh"), "",
            f"or, downloaded from the run's page as {code_span(artifact + '.zip', in_table=False)}:", "",
            fenced(shlex.join(["unzip", artifact + ".zip", "-d", into]), "sh"), "",
            "then read its transcript or its audit table, run its denied calls, or continue it:", "",
            fenced("\n".join(read), "sh"), ""]


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


def sandbox_text(sandbox: Mapping[str, Any] | None) -> str:
    """`bwrap, network none` / `none (bubblewrap (bwrap) is not installed)`: what contained the run."""
    if not sandbox:
        return ""
    if sandbox.get("active"):
        network = sandbox.get("network")
        net = "allow-list " + ", ".join(network["allow"]) if isinstance(network, Mapping) else str(network)
        return f"{sandbox.get('mechanism')}, network {net}"
    return f"none ({sandbox.get('reason')})"
