"""Compare two suites' event logs after normalization: did a refactor change any event?

    AGENT_RUN_GOLDEN_DIR=BASE python -m pytest      # on the base commit (BASE, NEW: directories of your own)
    AGENT_RUN_GOLDEN_DIR=NEW python -m pytest       # on the last commit
    python bench/events_diff.py BASE NEW [--noise BASE2]

tests/conftest.py copies every events.jsonl a test made into GOLDEN/<test id>/<path under tmp_path>. What
differs between two runs of the same code is made a placeholder: run ids, `ts`, durations, `prev` and every
hash (hex of 32+ digits, numbered by first appearance so equal hashes stay equal), the test's tmp_path and
other temp directories, loopback ports, process ids. Events of calls that ran at once are put in
(turn, call_index) order and `seq` is dropped. Runs of one test are compared as a multiset (their directory
names are run ids, their order the clock's). `--noise DIR`, a second suite of the base, leaves out the tests
whose logs differ between two runs of the same code (they are printed, not hidden).

Prints the tests compared, the differences (first lines of each), and exits 1 when there is any.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

RUN_ID = re.compile(r"\d{8}T\d{12}Z\\?-[0-9a-f]{6}")  # also inside an escaped regex pattern
SPILL = re.compile(r"tool_\d{8}T\d{6,12}Z?_[0-9a-f]{8}")  # a spill file's name: its time and 4 random bytes
HEX = re.compile(r"\b[0-9a-f]{32,}\b")
# a loopback server's port after any way of writing its host (decimal, fullwidth dots, [::1]): linear, no backtracking
PORT = re.compile(r"(?<=[0-9a-zA-Z\].\uff0e\u3002\uff61])(:)\d{4,5}(?=[/\"'\s]|$)")
PORT_ARG = re.compile(r"(127\.0\.0\.1[\"'\\]{1,8}, )\d{4,5}\b")  # a port in code: ('127.0.0.1', PORT), quoted
SECONDS = re.compile(r"\b\d+(?:\.\d+)? ?s\b")  # a duration written into a message ("killed after 8.4s")
CLOCK = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)?")  # a time a tool printed
OWN = re.compile(r"(agent-run-(?:sandbox|private|git|outputs)-|home-box-)[A-Za-z0-9_]{8,16}"
                 r"|(agent-run-(?:orphan|escape-test)-)\d+"
                 r"|(\b(?:net|pid|mnt|user):\[)\d+")  # a private directory's random name, a test's pid, a namespace
TMPDIR = re.compile(r"/tmp/(?:pytest-of-[^/\"\s]+/pytest-\d+/(?:popen-gw\d+/)?[^/\"\s]+|tmp[A-Za-z0-9_]{6,})")
# The code's own checkout (a shipped policy's path names where agent-run is installed).
SHIPPED = re.compile(r"/[^\"\s\\]*?/(?:policies|runner/_shipped_policies)/([a-z_-]+\.jsonc)")
DURATION = re.compile(r"(duration|elapsed|wall|waited)(_s|_ms)?$")
VOLATILE = {"ts", "timestamp", "prev", "seq", "eventId", "pid", "started_at", "ended_at",
            # sizes of what is compared in full elsewhere (a prompt is its messages, a result its content): a port's
            # or a temporary path's length moves them by a byte
            "prompt_bytes", "estimated_tokens", "bytes", "before_tokens", "after_tokens",
            "port"}  # a loopback server's


def _scrub(value: Any, key: str, ids: dict[str, str]) -> Any:
    if key in VOLATILE:
        return f"<{key}>"
    if DURATION.search(key) and isinstance(value, int | float):
        return "<duration>"
    if isinstance(value, dict):
        out = {k: _scrub(v, k, ids) for k, v in value.items()}
        if isinstance(value.get("content"), str) and out["content"] != value["content"] and "bytes" in out:
            out["bytes"] = "<bytes of a normalized content>"  # a path's length is the machine's
        return out
    if isinstance(value, list):
        return [_scrub(v, key, ids) for v in value]
    if isinstance(value, str):
        return _text(value, ids)
    return value


def _text(text: str, ids: dict[str, str]) -> str:
    text = RUN_ID.sub(lambda m: ids.setdefault(m.group(0).replace("\\", ""), f"<run{len(ids)}>"), text)
    text = SPILL.sub(lambda m: ids.setdefault(m.group(0), f"<spill{len(ids)}>"), text)
    text = HEX.sub(lambda m: ids.setdefault(m.group(0), f"<hash{len(ids)}>"), text)
    text = PORT.sub(r"\1<port>", text)
    text = PORT_ARG.sub(r"\1<port>", text)
    text = SECONDS.sub("<seconds>", text)
    text = CLOCK.sub("<clock>", text)
    text = OWN.sub(lambda m: (m.group(1) or m.group(2) or m.group(3)) + "<random>", text)
    text = SHIPPED.sub(r"<checkout>/policies/\1", text)
    return TMPDIR.sub("<tmp>", text)


def _streams(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The run's own agent's events, then each child's (by id: ids are given in the model's order), each stream in
    its own order: children that ran at once interleave by the clock, not by what they did."""
    by: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for event in events:
        agent = event.get("agent")
        by[agent.get("id", "") if isinstance(agent, dict) else ""].append(event)
    return [e for key in sorted(by, key=lambda k: (k != "", len(k), k)) for e in _order(by[key])]


def _order(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Consecutive events of one turn's calls (each with a call_index) in (turn, call_index) order, stable."""
    out: list[dict[str, Any]] = []
    block: list[dict[str, Any]] = []
    for event in [*events, None]:
        if event is not None and isinstance(event.get("call_index"), int) and \
                (not block or block[0].get("turn") == event.get("turn")):
            block.append(event)
            continue
        out += sorted(block, key=lambda e: (e.get("turn") or 0, e["call_index"]))
        block = []
        if event is not None:
            if isinstance(event.get("call_index"), int):
                block.append(event)
            else:
                out.append(event)
    return out


def normalize(path: Path, tmp: str) -> list[str]:
    ids: dict[str, str] = {}
    events = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        line = line.replace(tmp, "<tmp_path>") if tmp else line
        try:
            events.append(json.loads(line))
        except ValueError:
            events.append({"unparsed": line})
    # call ids name the call by position; concurrency decides only the order of their events
    return [json.dumps(_scrub(e, "", ids), sort_keys=True, ensure_ascii=False) for e in _streams(events)]


def load(golden: Path) -> dict[str, dict[str, list[list[str]]]]:
    """test id -> run-id-free relative path -> normalized logs (sorted: a multiset)."""
    tests: dict[str, dict[str, list[list[str]]]] = {}
    for test in sorted(p for p in golden.iterdir() if p.is_dir()):
        tmp = (test / "_tmp").read_text(encoding="utf-8") if (test / "_tmp").exists() else ""
        runs: dict[str, list[list[str]]] = defaultdict(list)
        for log in test.rglob("events.jsonl"):
            key = RUN_ID.sub("<run>", log.relative_to(test).as_posix())
            runs[key].append(normalize(log, tmp))
        tests[test.name] = {k: sorted(v) for k, v in runs.items()}
    return tests


def differences(base: dict[str, Any], new: dict[str, Any]) -> dict[str, str]:
    found: dict[str, str] = {}
    for test in sorted(set(base) & set(new)):
        if base[test] == new[test]:
            continue
        for key in sorted(set(base[test]) | set(new[test])):
            a, b = base[test].get(key, []), new[test].get(key, [])
            if a == b:
                continue
            if len(a) != len(b):
                found[test] = f"{key}: {len(a)} run(s) before, {len(b)} after"
                break
            for x, y in zip(a, b, strict=True):
                if x != y:
                    line = next((i for i, (p, q) in enumerate(zip(x, y, strict=False)) if p != q), min(len(x), len(y)))
                    found[test] = f"{key} event {line + 1} ({len(x)} → {len(y)} events)" + _shown(x, y, line)
                    break
            break
    return found


def _shown(x: list[str], y: list[str], line: int) -> str:
    """The keys of the first differing event that differ, before and after (or the whole lines)."""
    if line >= len(x) or line >= len(y):
        before, after = (x[line][:400] if line < len(x) else "(none)"), (y[line][:400] if line < len(y) else "(none)")
        return f"\n    - {before}\n    + {after}"
    a, b = json.loads(x[line]), json.loads(y[line])
    keys = sorted(k for k in {*a, *b} if a.get(k) != b.get(k))
    return "".join(f"\n    {k}: - {json.dumps(a.get(k))[:300]}\n    {' ' * len(k)}  + {json.dumps(b.get(k))[:300]}"
                   for k in keys)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("base", type=Path)
    parser.add_argument("new", type=Path)
    parser.add_argument("--noise", type=Path, help="a second suite run of the base: its differences are noise")
    args = parser.parse_args()
    base, new = load(args.base), load(args.new)
    noisy = set(differences(base, load(args.noise))) if args.noise else set()
    found = {t: d for t, d in differences(base, new).items() if t not in noisy}
    only = sorted(set(base) ^ set(new))
    print(f"tests with event logs: {len(base)} before, {len(new)} after, {len(set(base) & set(new))} in both")
    if noisy:
        print(f"left out as noise (differ between two runs of the base): {len(noisy)}")
        for test in sorted(noisy):
            print(f"  ~ {test}")
    if only:
        print(f"in one suite only (a test renamed, added or skipped): {len(only)}")
        for test in only[:50]:
            print(f"  ? {test}")
    print(f"differences: {len(found)}")
    for test, what in found.items():
        print(f"  ✗ {test}\n    {what}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
