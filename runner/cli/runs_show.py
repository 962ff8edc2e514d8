"""`agent-run runs show`: what one run did, as text, as JSON (written as it goes: a call's arguments are
copied from the spool, never held whole) or as a transcript."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import IO, Any

import click

from runner.cli.fence import prints_recorded_text
from runner.cli.runs_audit import audit_json, audit_records, audit_table
from runner.cli.runs_format import cell, changed, clip, cost, decision, duration, finding, table, total_tokens
from runner.cli.runs_read import Spilled, Spool, account, left_out, origin, overview, runs_root
from runner.core.events import MAIN
from runner.core.outcome import EXIT_CODES, Status
from runner.report.transcript import transcript_streamed

USAGE = EXIT_CODES[Status.USAGE_ERROR]
_ENVELOPE = ("seq", "ts", "run_id", "type", "agent")


@click.command("show")
@click.argument("run_dir", metavar="RUN_DIR")
@click.option("--workspace", default=".", show_default=True, metavar="DIR",
              help="Where to look up RUN_DIR when it is a bare run id.")
@click.option("--runs-dir", metavar="DIR", help="[default: WORKSPACE/.agent-run/runs]")
@click.option("--json", "as_json", is_flag=True, help="The account as one JSON object.")
@click.option("--transcript", is_flag=True,
              help="The run as Markdown a person reads: the task, each turn (what the model said, every call "
                   "with its decision and output), the final answer, the check's output, denials, usage.")
@click.option("--audit", is_flag=True,
              help="audit.jsonl as a table: one row per tool call (its risk, decision, approval scope, deciding "
                   "rule, outcome, output); with --json, its records as a JSON array.")
@prints_recorded_text
def show_cmd(run_dir: str, workspace: str, runs_dir: str | None, as_json: bool, transcript: bool,
             audit: bool) -> None:
    """What one run did: outcome, usage, denials with their replay commands, every model
    request, every tool call, compactions. RUN_DIR is a run directory or a run id."""
    path = Path(run_dir).expanduser()
    if not path.is_dir():
        path = runs_root(workspace, runs_dir) / run_dir
    if not (path / "events.jsonl").is_file() and not (path / "summary.json").is_file():
        click.echo(f"agent-run: {run_dir} is not a run directory (no events.jsonl or summary.json)", err=True)
        sys.exit(USAGE)
    path = path.resolve()
    if audit:
        _show_audit(path, run_dir, as_json)
        return
    summary = overview(path)
    if transcript:
        # Rendered afresh from the events and the summary, not read from transcript.md (which is not sealed).
        text = sys.stdout
        for piece in transcript_streamed(path, summary, left_out(path)):  # written as it is rendered: never held
            text.write(piece)
        text.flush()
        return
    if not as_json:
        for line in render(account(path, summary)):
            click.echo(line.rstrip())
        return
    spool = Spool()
    try:
        out = sys.stdout.buffer
        write_json(account(path, summary, spool), spool, out)
        out.flush()
    finally:
        spool.close()


def _show_audit(path: Path, run_dir: str, as_json: bool) -> None:
    records = audit_records(path)
    if records is None:
        click.echo(f"agent-run: {run_dir} has no audit.jsonl (recorded by an agent-run before it had one)", err=True)
        sys.exit(USAGE)
    text = sys.stdout  # written as it is read: an audit.jsonl of any size is never held
    pieces = audit_json(records()) if as_json else (line.rstrip() + "\n" for line in audit_table(records))
    for piece in pieces:
        text.write(piece)
    if as_json:
        text.write("\n")
    text.flush()


def _price_source(usage: dict[str, Any]) -> str:
    """Where the price came from (`policy`, `genai-prices 0.2.3`), as the step summary says it."""
    source = usage.get("price_source")
    return f" (prices: {clip(source, 100)})" if isinstance(source, str) and source else ""


# --- JSON, written as it goes ------------------------------------------------------------------

_PLACEHOLDER = "\ue000agent-run: spilled arguments\ue000"


def write_json(data: dict[str, Any], spool: Spool, out: IO[bytes]) -> None:
    """`data` as json.dumps(indent=2, sort_keys=True) would print it, one list item at a time, a spilled
    call's arguments copied from the spool in chunks."""
    out.write(b"{\n")
    keys = sorted(data)
    for i, key in enumerate(keys):
        value = data[key]
        out.write(f"  {json.dumps(key)}: ".encode())
        if isinstance(value, list) and value:
            out.write(b"[\n")
            for j, item in enumerate(value):
                _write_item(item, spool, out)
                out.write(b",\n" if j < len(value) - 1 else b"\n")
            out.write(b"  ]")
        else:
            out.write(_dumps(value, "  ").encode())
        out.write(b",\n" if i < len(keys) - 1 else b"\n")
    out.write(b"}\n")


def _dumps(value: Any, indent: str) -> str:
    """json.dumps(indent=2) of a value nested at `indent` (a JSON string never holds a raw newline)."""
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False).replace("\n", "\n" + indent)


def _write_item(item: Any, spool: Spool, out: IO[bytes]) -> None:
    spilled = item.get("arguments") if isinstance(item, dict) else None
    if not isinstance(spilled, Spilled):
        out.write(("    " + _dumps(item, "    ")).encode())
        return
    text = "    " + _dumps({**item, "arguments": _PLACEHOLDER}, "    ")
    before, _, after = text.partition(f'"arguments": {json.dumps(_PLACEHOLDER, ensure_ascii=False)}')
    out.write(f'{before}"arguments": '.encode())
    spool.copy(spilled, out)
    out.write(after.encode())


# --- text --------------------------------------------------------------------------------------

def render(data: dict[str, Any]) -> list[str]:
    s = data["summary"]
    usage = s.get("usage") or {}
    out = [f"run {s.get('run_id') or Path(data['run_dir']).name}: {s.get('status') or '?'} "
           f"(exit {cell(s.get('exit_code'))})"]
    fields: list[tuple[str, Any]] = [
        ("reason", s.get("reason")),
        ("title", s.get("title")),
        ("model", s.get("model")),
        ("policy", s.get("policy")),
        ("duration", f"{duration(s.get('duration_s'))} · {cell(s.get('turns'))} turns · "
                     f"{cell(s.get('tool_calls'))} tool calls"),
        ("usage", f"{cell(usage.get('prompt_tokens'))} prompt ({cell(usage.get('cached_tokens'))} cached) · "
                  f"{cell(usage.get('completion_tokens'))} completion · {cell(total_tokens(usage))} total · "
                  f"cost {cost(usage.get('cost_usd'))}" + _price_source(usage)),
        ("loop", finding(s.get("loop"))),
        ("budget", finding(s.get("budget"))),
        # The check's tail is for the transcript (--transcript): one line here, its output's file named.
        ("check", finding({k: v for k, v in (s.get("check") or {}).items() if k != "output_tail"})),
        ("warnings", "; ".join(s.get("loop_warnings") or []) or None),
        ("changed", changed(s)),
        ("run dir", data["run_dir"]),
        ("from", origin(s) or None),
        ("then", ", ".join(f"{c.get('kind')} {c.get('run_id')}" for c in data.get("continued_by") or []) or None),
    ]
    out += [f"  {name + ':':<10}{value}" for name, value in fields if value not in (None, "")]
    out += _agents(s)

    denials = data["denials"]
    out += ["", f"denials ({len(denials)})" if denials else "denials: none"]
    for d in denials:
        rule = d.get("rule") if isinstance(d.get("rule"), dict) else {}
        where = f"{Path(str(rule['file'])).name}:{rule.get('line') or rule.get('index')} " if rule.get("file") else ""
        by = f"rule {where}{rule.get('pattern')}" if rule else "no rule"
        out.append(f"  {d.get('call_id')} {d.get('tool')}: {d.get('decision')} {d.get('domain')} on {d.get('target')}"
                   f" ({by})")
        if d.get("replay"):
            out.append(f"    replay: {d['replay']}")
        if d.get("rerun"):
            out.append(f"    rerun:  {d['rerun']}")

    requests = data["requests"]
    # With subagents, a first column says whose each request and call is (a child's indented under its parent's
    # `task` call, which comes just before its own): without them the tables read as they always have.
    nested = any(r.get("agent") for r in [*requests, *data["tool_calls"]])
    out += ["", f"requests ({len(requests)})"]
    rows = [[cell(r["turn"]), cell(r["messages"]), cell(r["estimated_tokens"]), cell(r["prompt_tokens"]),
             cell(r["cached_tokens"]), cell(r["completion_tokens"]), cell(r.get("stage")),
             cell(r.get("extends_previous"))] for r in requests]
    headers = ["turn", "messages", "est. tokens", "prompt", "cached", "completion", "stage", "extends-previous"]
    out += ["  " + line for line in table(*_by_agent(nested, headers, rows, requests))]

    calls = data["tool_calls"]
    out += ["", f"tool calls ({len(calls)})"]
    if calls:
        rows = [[cell(c["turn"]), cell(c["tool"]) if c["tool"] else "?", c["args"], decision(c),
                 cell(c.get("outcome")), cell(c.get("bytes"))] for c in calls]
        headers = ["turn", "tool", "args", "decision", "outcome", "bytes"]
        out += ["  " + line for line in table(*_by_agent(nested, headers, rows, calls))]

    if data["compactions"]:
        out += ["", f"compaction ({len(data['compactions'])})"]
        for c in data["compactions"]:
            rest = " ".join(f"{k}={clip(cell(v))}" for k, v in c.items() if k not in _ENVELOPE)
            who = f"[{c['agent'].get('id')}] " if isinstance(c.get("agent"), dict) else ""
            out.append(f"  {who}seq {cell(c.get('seq'))}: {rest}".rstrip())
    return out


def _who(agent: dict[str, Any] | None) -> str:
    """An agent's id, indented by its depth: `main`, `  a1`, `    a2`."""
    if not agent:
        return MAIN
    depth = agent["depth"] if isinstance(agent.get("depth"), int) else 1
    return "  " * depth + str(agent.get("id"))


def _by_agent(nested: bool, headers: list[str], rows: list[list[str]],
              entries: list[dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    if not nested:
        return headers, rows
    return ["agent", *headers], [[_who(e.get("agent")), *row] for e, row in zip(entries, rows, strict=True)]


def _agents(s: dict[str, Any]) -> list[str]:
    """summary.json `agents`, when the run had subagents: each one's outcome and what it used."""
    agents = [a for a in s.get("agents") or [] if isinstance(a, dict)]
    if len(agents) < 2:
        return []
    rows = []
    for a in agents:
        usage = a.get("usage") or {}
        status = a.get("status") or (s.get("status") if a.get("id") == MAIN else None)
        rows.append([_who(a if a.get("id") != MAIN else None), a.get("name") or "-", a.get("model") or "-",
                     status or "-", cell(a.get("turns")), cell(a.get("tool_calls")), cell(total_tokens(usage)),
                     cost(a.get("cost_usd")) if "cost_usd" in a else "-", a.get("reason") or ""])
    headers = ["agent", "name", "model", "status", "turns", "tools", "tokens", "cost", "reason"]
    return ["", f"agents ({len(agents)})", *("  " + line for line in table(headers, rows))]
