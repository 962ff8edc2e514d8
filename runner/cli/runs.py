"""`agent-run runs list|show`: what past runs did, read from their run directories
(summary.json and events.jsonl, streamed; never written)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from runner.core.events import MAIN, call_ref
from runner.core.outcome import EXIT_CODES, Status
from runner.record.jsonl import iter_events
from runner.record.rundir import default_runs_dir
from runner.report.transcript import transcript_of

USAGE = EXIT_CODES[Status.USAGE_ERROR]
ARGS_CHARS = 60
_ENVELOPE = ("seq", "ts", "run_id", "type", "agent")


@click.group("runs")
def runs() -> None:
    """List past runs and show what one of them did."""


@runs.command("list")
@click.option("--workspace", default=".", show_default=True, metavar="DIR")
@click.option("--runs-dir", metavar="DIR", help="[default: WORKSPACE/.agent-run/runs]")
@click.option("--limit", default=20, show_default=True, type=click.IntRange(min=1), metavar="N")
def list_cmd(workspace: str, runs_dir: str | None, limit: int) -> None:
    """One line per run, newest first: id, status, exit, turns, tool calls, tokens, duration, title."""
    root = _runs_root(workspace, runs_dir)
    dirs = run_dirs(root)
    if not dirs:
        click.echo(f"no runs in {root}", err=True)
        return
    rows = []
    for path in dirs[:limit]:
        s = overview(path)
        usage = s.get("usage") or {}
        rows.append([s.get("run_id") or path.name, s.get("status") or "?", _cell(s.get("exit_code")),
                     _cell(s.get("turns")), _cell(s.get("tool_calls")), _cell(_total_tokens(usage)),
                     _duration(s.get("duration_s")), " ".join(filter(None, [origin(s), s.get("title")]))])
    headers = ["run", "status", "exit", "turns", "tools", "tokens", "duration", "title"]
    for line in table(headers, rows):
        click.echo(line.rstrip())
    if len(dirs) > limit:
        click.echo(f"{len(dirs) - limit} older run(s) not shown; use --limit", err=True)


@runs.command("show")
@click.argument("run_dir", metavar="RUN_DIR")
@click.option("--workspace", default=".", show_default=True, metavar="DIR",
              help="Where to look up RUN_DIR when it is a bare run id.")
@click.option("--runs-dir", metavar="DIR", help="[default: WORKSPACE/.agent-run/runs]")
@click.option("--json", "as_json", is_flag=True, help="The account as one JSON object.")
@click.option("--transcript", is_flag=True,
              help="The run as Markdown a person reads: the task, each turn (what the model said, every call "
                   "with its decision and output), the final answer, the check's output, denials, usage.")
def show_cmd(run_dir: str, workspace: str, runs_dir: str | None, as_json: bool, transcript: bool) -> None:
    """What one run did: outcome, usage, denials with their replay commands, every model
    request, every tool call, compactions. RUN_DIR is a run directory or a run id."""
    path = Path(run_dir).expanduser()
    if not path.is_dir():
        path = _runs_root(workspace, runs_dir) / run_dir
    if not (path / "events.jsonl").is_file() and not (path / "summary.json").is_file():
        click.echo(f"agent-run: {run_dir} is not a run directory (no events.jsonl or summary.json)", err=True)
        sys.exit(USAGE)
    if transcript:
        # Rendered afresh from the events and the summary, not read from transcript.md (which is not sealed).
        click.echo(transcript_of(path.resolve(), overview(path.resolve())), nl=False)
        return
    data = account(path.resolve())
    if as_json:
        click.echo(json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False))
        return
    for line in render(data):
        click.echo(line.rstrip())


# --- reading a run directory ------------------------------------------------------------------

def _runs_root(workspace: str, runs_dir: str | None) -> Path:
    return Path(runs_dir).expanduser().resolve() if runs_dir else default_runs_dir(Path(workspace).resolve())


def run_dirs(root: Path) -> list[Path]:
    """Run directories under root, newest first (a run id starts with its UTC start time)."""
    if not root.is_dir():
        return []
    found = [p for p in root.iterdir()
             if p.is_dir() and ((p / "summary.json").is_file() or (p / "events.jsonl").is_file())]
    return sorted(found, key=lambda p: p.name, reverse=True)


def _summary(run_dir: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    return data if isinstance(data, dict) else None


def origin(summary: dict[str, Any]) -> str:
    """What `runs list` puts before the title: `[replay of RUN]` (`agent-run replay`: approved calls run),
    `[resume of RUN]` (`replay --continue`: the conversation went on, so it has turns), `[model replay of
    DIR]` (`--model replay:DIR`); else ''."""
    if summary.get("replay_of"):
        kind = "resume" if (summary.get("turns") or 0) > 0 else "replay"
        return f"[{kind} of {summary['replay_of']}]"
    resumed = summary.get("resumed_from")
    if isinstance(resumed, dict):  # `agent-run resume` / `fork`
        at = f" at turn {resumed.get('at_turn')}" if resumed.get("kind") == "fork" else ""
        return f"[{resumed.get('kind')} of {resumed.get('run_id')}{at}]"
    model = str(summary.get("model") or "")
    if model.startswith("replay:"):
        return f"[model replay of {Path(model[len('replay:'):]).name}]"
    return ""


def overview(run_dir: Path) -> dict[str, Any]:
    """summary.json; for a run still going (or killed without one), what its events say so far."""
    summary = _summary(run_dir)
    if summary is not None:
        return summary
    out: dict[str, Any] = {"run_id": run_dir.name, "status": "running?", "turns": 0, "tool_calls": 0,
                           "usage": {"prompt_tokens": 0, "completion_tokens": 0, "cached_tokens": 0}}
    agents: dict[str, dict[str, Any]] = {MAIN: _agent_entry({"id": MAIN, "depth": 0})}
    for e in iter_events(run_dir / "events.jsonl"):
        kind = e.get("type")
        agent = _agent_of(e)
        entry = agents.setdefault(str(agent["id"]) if agent else MAIN, _agent_entry(agent or {}))
        if kind == "run_started":
            out.update(model=e.get("model"), policy=e.get("policy"), replay_of=e.get("replay_of"),
                       resumed_from=e.get("resumed_from"))
            entry["model"] = e.get("model")
        elif kind == "model_response":
            if agent is None:  # the run's turns are its own agent's; a subagent numbers its own from 1
                out["turns"] = max(out["turns"], e.get("turn") or 0)
            entry["turns"] = max(entry["turns"], e.get("turn") or 0)
            for key in out["usage"]:
                out["usage"][key] += int((e.get("usage") or {}).get(key) or 0)
                entry["usage"][key] += int((e.get("usage") or {}).get(key) or 0)
        elif kind == "tool_call":
            out["tool_calls"] += 1
            entry["tool_calls"] += 1
        elif kind == "subagent_started":
            entry.update(model=e.get("model"), mode=e.get("mode"))
        elif kind == "subagent_finished":
            entry.update(status=e.get("status"), reason=e.get("reason"))
        elif kind == "run_finished":
            out.update(status=e.get("status"), exit_code=e.get("exit_code"), reason=e.get("reason"))
    if len(agents) > 1:
        out["agents"] = list(agents.values())
    return out


def _agent_of(e: dict[str, Any]) -> dict[str, Any] | None:
    agent = e.get("agent")
    return agent if isinstance(agent, dict) and agent.get("id") else None


def _agent_entry(agent: dict[str, Any]) -> dict[str, Any]:
    """A summary.json `agents` entry, as far as a run without a summary (still going, or killed) shows it."""
    return {"id": agent.get("id"), "name": agent.get("name"), "parent_call_id": agent.get("parent_call_id"),
            "depth": agent.get("depth"), "model": None, "status": "running?" if agent.get("id") != MAIN else None,
            "turns": 0, "tool_calls": 0, "usage": {"prompt_tokens": 0, "completion_tokens": 0, "cached_tokens": 0}}


def account(run_dir: Path) -> dict[str, Any]:
    """Everything `runs show` prints, from one pass over the events."""
    summary = overview(run_dir)
    requests: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    # Call ids are only unique within one agent's conversation (a subagent numbers its own): keyed by
    # call_ref, `a1:call_1_0`, as summary.json's denials and `replay --call` name a subagent's call.
    by_ref: dict[str, dict[str, Any]] = {}  # the latest call with that ref
    compactions: list[dict[str, Any]] = []
    denials: list[dict[str, Any]] = []
    pending: dict[str, dict[str, Any]] = {}  # per agent id, the request waiting for its response
    for e in iter_events(run_dir / "events.jsonl"):
        kind = e.get("type")
        agent = _agent_of(e)
        aid = str(agent["id"]) if agent else MAIN
        ref = call_ref(agent, str(e.get("call_id")))
        if kind == "model_request":
            pending[aid] = {"seq": e.get("seq"), "turn": e.get("turn"), "messages": e.get("message_count"),
                            "estimated_tokens": e.get("estimated_tokens"), "prompt_tokens": None,
                            "cached_tokens": None, "completion_tokens": None, "stage": e.get("stage"),
                            "extends_previous": e.get("extends_previous"), "agent": agent}
            requests.append(pending[aid])
        elif kind == "model_response":
            request = pending.pop(aid, None)
            if request is None:  # a response without its own request event (e.g. a compaction call)
                request = {"seq": e.get("seq"), "turn": e.get("turn"), "messages": None, "estimated_tokens": None,
                           "stage": None, "extends_previous": None, "agent": agent}
                requests.append(request)
            usage = e.get("usage") or {}
            request.update(prompt_tokens=usage.get("prompt_tokens"), cached_tokens=usage.get("cached_tokens"),
                           completion_tokens=usage.get("completion_tokens"), finish_reason=e.get("finish_reason"))
        elif kind == "tool_call":
            call = {"seq": e.get("seq"), "turn": e.get("turn"), "call_id": ref, "tool": e.get("tool"),
                    "arguments": e.get("arguments"), "decision": None, "outcome": None, "bytes": None, "agent": agent}
            calls.append(call)
            by_ref[ref] = call
        elif kind == "permission_decision":
            call = by_ref.get(ref)
            if call is not None:
                call["decision"] = e.get("decision")
                call["policy_decision"] = e.get("policy_decision")
            if e.get("decision") == "deny":
                denials.append(_denial(e))
        elif kind == "tool_result":
            call = by_ref.get(ref)
            if call is not None:
                call["outcome"] = "ok" if e.get("ok") else (e.get("error_type") or "error")
                call["bytes"] = e.get("bytes")
        elif kind == "compaction":
            compactions.append({k: v for k, v in e.items() if k not in ("ts", "run_id", "type")})
    if isinstance(summary.get("denials"), list):
        denials = summary["denials"]
    continued = list(iter_events(run_dir / "continuations.jsonl"))  # a torn line (a killed resume) is skipped
    return {"run_dir": str(run_dir), "summary": summary, "denials": denials, "requests": requests,
            "tool_calls": calls, "compactions": compactions, "continued_by": continued}


def _denial(e: dict[str, Any]) -> dict[str, Any]:
    """As summary.json records a denial (runner/report/summary.py), for a run without one."""
    targets = e.get("targets") or [{}]
    deciding = next((t for t in targets if t.get("decision") == e.get("policy_decision")), targets[0])
    agent = _agent_of(e)
    return {"call_id": call_ref(agent, str(e.get("call_id"))), "tool": e.get("tool"),
            "domain": e.get("permissionDomain"), "target": deciding.get("target"),
            "decision": e.get("policy_decision"), "rule": e.get("rule"), "approve": e.get("approve"),
            "replay": e.get("replay"), "rerun": e.get("rerun"), **({"agent": agent} if agent else {})}


# --- printing ---------------------------------------------------------------------------------

def render(data: dict[str, Any]) -> list[str]:
    s = data["summary"]
    usage = s.get("usage") or {}
    out = [f"run {s.get('run_id') or Path(data['run_dir']).name}: {s.get('status', '?')} "
           f"(exit {_cell(s.get('exit_code'))})"]
    fields: list[tuple[str, Any]] = [
        ("reason", s.get("reason")),
        ("title", s.get("title")),
        ("model", s.get("model")),
        ("policy", s.get("policy")),
        ("duration", f"{_duration(s.get('duration_s'))} · {_cell(s.get('turns'))} turns · "
                     f"{_cell(s.get('tool_calls'))} tool calls"),
        ("usage", f"{_cell(usage.get('prompt_tokens'))} prompt ({_cell(usage.get('cached_tokens'))} cached) · "
                  f"{_cell(usage.get('completion_tokens'))} completion · {_cell(_total_tokens(usage))} total · "
                  f"cost {_cost(usage.get('cost_usd'))}"),
        ("loop", _finding(s.get("loop"))),
        ("budget", _finding(s.get("budget"))),
        ("check", _finding(s.get("check"))),
        ("warnings", "; ".join(s.get("loop_warnings") or []) or None),
        ("changed", _changed(s)),
        ("run dir", data["run_dir"]),
        ("from", origin(s) or None),
        ("then", ", ".join(f"{c.get('kind')} {c.get('run_id')}" for c in data.get("continued_by") or []) or None),
    ]
    out += [f"  {name + ':':<10}{value}" for name, value in fields if value not in (None, "")]
    out += _agents(s)

    denials = data["denials"]
    out += ["", f"denials ({len(denials)})" if denials else "denials: none"]
    for d in denials:
        rule = d.get("rule") or {}
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
    rows = [[_cell(r["turn"]), _cell(r["messages"]), _cell(r["estimated_tokens"]), _cell(r["prompt_tokens"]),
             _cell(r["cached_tokens"]), _cell(r["completion_tokens"]), _cell(r.get("stage")),
             _cell(r.get("extends_previous"))] for r in requests]
    headers = ["turn", "messages", "est. tokens", "prompt", "cached", "completion", "stage", "extends-previous"]
    out += ["  " + line for line in table(*_by_agent(nested, headers, rows, requests))]

    calls = data["tool_calls"]
    out += ["", f"tool calls ({len(calls)})"]
    if calls:
        rows = [[_cell(c["turn"]), c["tool"] or "?", _short_args(c.get("arguments")), _decision(c),
                 c.get("outcome") or "-", _cell(c.get("bytes"))] for c in calls]
        headers = ["turn", "tool", "args", "decision", "outcome", "bytes"]
        out += ["  " + line for line in table(*_by_agent(nested, headers, rows, calls))]

    if data["compactions"]:
        out += ["", f"compaction ({len(data['compactions'])})"]
        for c in data["compactions"]:
            rest = " ".join(f"{k}={_clip(_cell(v))}" for k, v in c.items() if k not in _ENVELOPE)
            who = f"[{c['agent'].get('id')}] " if isinstance(c.get("agent"), dict) else ""
            out.append(f"  {who}seq {_cell(c.get('seq'))}: {rest}".rstrip())
    return out


def _who(agent: dict[str, Any] | None) -> str:
    """An agent's id, indented by its depth: `main`, `  a1`, `    a2`."""
    if not agent:
        return MAIN
    depth = agent.get("depth") if isinstance(agent.get("depth"), int) else 1
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
                     status or "-", _cell(a.get("turns")), _cell(a.get("tool_calls")), _cell(_total_tokens(usage)),
                     _cost(a.get("cost_usd")) if "cost_usd" in a else "-", a.get("reason") or ""])
    headers = ["agent", "name", "model", "status", "turns", "tools", "tokens", "cost", "reason"]
    return ["", f"agents ({len(agents)})", *("  " + line for line in table(headers, rows))]


def table(headers: list[str], rows: list[list[str]]) -> list[str]:
    """Columns as wide as their widest cell; numbers right-aligned; the last column left unpadded."""
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(headers)]
    numeric = [all(_is_number(r[i]) for r in rows) and any(r[i] != "-" for r in rows) for i in range(len(headers))]

    def line(cells: list[str]) -> str:
        parts = [c.rjust(w) if num else c.ljust(w) for c, w, num in zip(cells, widths, numeric, strict=True)]
        return "  ".join(parts)

    return [line(headers), *(line(r) for r in rows)]


def _clip(text: str, limit: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _is_number(cell: str) -> bool:
    return cell == "-" or cell.replace(",", "").replace(".", "", 1).lstrip("-").isdigit()


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, dict | list):
        return json.dumps(value, sort_keys=True, ensure_ascii=False)
    return str(value)


def _total_tokens(usage: dict[str, Any]) -> int | None:
    if usage.get("total_tokens") is not None:
        return usage["total_tokens"]
    if usage.get("prompt_tokens") is None and usage.get("completion_tokens") is None:
        return None
    return int(usage.get("prompt_tokens") or 0) + int(usage.get("completion_tokens") or 0)


def _duration(seconds: Any) -> str:
    if not isinstance(seconds, int | float):
        return "-"
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    return f"{minutes // 60}h{minutes % 60:02d}m"


def _cost(cost: Any) -> str:
    if not isinstance(cost, int | float):
        return "unknown"
    return f"${cost:.4f}" if cost >= 0.01 else f"${cost:.6f}"


def _finding(value: Any) -> str | None:
    if not value:
        return None
    if isinstance(value, dict):
        return " ".join(f"{k}={_cell(v)}" for k, v in value.items())
    return _cell(value)


def _changed(s: dict[str, Any]) -> str | None:
    if "changed_files" not in s:
        return None
    files = s["changed_files"]
    if files is None:
        return f"unknown ({s.get('changes_error') or 'not recorded'})"
    return ", ".join(files) if files else "none"


def _decision(call: dict[str, Any]) -> str:
    decision = call.get("decision")
    if decision is None:
        return "-"
    policy = call.get("policy_decision")
    return f"{decision} ({policy})" if policy and policy != decision and decision == "deny" else decision


def _short_args(raw: Any) -> str:
    """`path=notes.txt limit=5`, on one line, cut at ARGS_CHARS."""
    if not isinstance(raw, str):
        return "-"
    try:
        parsed = json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError:
        parsed = None
    if isinstance(parsed, dict):
        text = " ".join(f"{k}={v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)}"
                        for k, v in parsed.items())
    else:
        text = raw
    text = " ".join(text.split()) or "-"
    return text if len(text) <= ARGS_CHARS else text[: ARGS_CHARS - 1] + "…"
