"""How big a run's first request is, by part: the system text, the task, the tools array and each tool in it.

Each tool set is a real run (the `agent-run` next to `sys.executable`, `--policy default`) of a one-line task
against the scripted loopback server; the figures are read from the first request's body as the server
received it, so they are exactly what a model is sent. Tokens are estimated as characters / 4 of the compact
JSON (the form runner/model/transport.py sends). Asserts nothing (tests/tools/test_tool_budget.py holds the
default tools array to its budget).

    python bench/bench_prompt.py                          # the default tools, and --tools read,edit,bash
    python bench/bench_prompt.py --tools read,bash --tools read,grep,edit,bash [--json]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run from a checkout: the scripted server lives in tests/fakes

from tests.conftest import agent_run_argv, clean_env  # noqa: E402
from tests.fakes.openai_server import FakeOpenAI, reply  # noqa: E402

TASK = "Say hello.\n"


def tokens(value: Any) -> float:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return len(text) / 4


def first_request(tools: str | None) -> dict[str, Any]:
    """The body of the first request a run with `--tools tools` (None: the default set) sends."""
    with tempfile.TemporaryDirectory() as tmp, FakeOpenAI() as server:
        workspace = Path(tmp)
        (workspace / "task.md").write_text(TASK, encoding="utf-8")
        server.add(reply("hello"))
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY="bench", AGENT_RUN_MODEL="scripted-bench")
        argv = [*agent_run_argv(), "--policy", "default", "-q", *(["--tools", tools] if tools else []), "task.md"]
        proc = subprocess.run(argv, cwd=workspace, env=env, capture_output=True, text=True, timeout=300)
        if proc.returncode != 0 or not server.raw_requests:
            sys.exit(f"the run failed (exit {proc.returncode}):\n{proc.stderr}")
        return json.loads(server.raw_requests[0])


def sizes(body: dict[str, Any]) -> dict[str, Any]:
    messages = body["messages"]
    system = "".join(m["content"] for m in messages if m["role"] == "system")
    task = "".join(m["content"] for m in messages if m["role"] == "user")
    tools = body.get("tools") or []
    parts = {"system text": tokens(system), "task": tokens(task), "tools array": tokens(tools) if tools else 0.0}
    return {"total": tokens(body), **parts,
            "tools": {t["function"]["name"]: tokens(t) for t in tools}}


def show(label: str, figures: dict[str, Any]) -> None:
    total = figures["total"]
    print(f"\n{label}: first request {total:,.0f} tokens (chars/4, whole body)")
    for part in ("system text", "task", "tools array"):
        print(f"  {part:<14} {figures[part]:>7,.0f}  {figures[part] / total:>4.0%}")
    for name, size in figures["tools"].items():
        print(f"    {name:<20} {size:>6,.0f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tools", action="append", metavar="LIST",
                        help="a tool set to measure besides the default (repeatable; default: read,edit,bash)")
    parser.add_argument("--json", action="store_true", help="the figures as one JSON object")
    args = parser.parse_args()
    results = {"default": sizes(first_request(None))}
    for tools in args.tools or ["read,edit,bash"]:
        results[f"--tools {tools}"] = sizes(first_request(tools))
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    for label, figures in results.items():
        show(label, figures)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
