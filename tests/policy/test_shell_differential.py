"""The shell walker against bash itself (issue 25): 10,000 generated lines, each hiding `touch M<k>`
in quoting, expansions, substitutions, arithmetic and here-docs (tests/policy/shellgen.py, fixed
seed), are decided under a policy that allows only `echo *`, `printf *` and `true`, and run by bash.
Whenever bash created the marker, the policy must not have said `allow`.

Bash runs 1,000 cases per process: each in its own subshell, reached through `eval` (a line bash
cannot parse fails alone instead of ending the batch), with its output discarded. Every case keeps
fd 9 open on the pipe this test reads to its end, so a process substitution still running when its
case is over (`>(touch M1)`) is waited for too: the batch is over when the last holder exits. The
timeout only stops a hang."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from runner.policy.decide import decide
from runner.policy.load import load_policy
from runner.policy.targets import shell_targets
from tests.policy.shellgen import Case, cases

SEED = 20250125
COUNT = 10_000
BATCH = 1_000
BATCH_TIMEOUT_S = 300  # a batch takes a second or two; this only stops a hang

POLICY = {"permission": {"rules": [
    {"domain": "*", "pattern": "**", "decision": "ask"},
    {"domain": "bash", "pattern": "shell:echo *", "decision": "allow"},
    {"domain": "bash", "pattern": "shell:printf *", "decision": "allow"},
    {"domain": "bash", "pattern": "shell:true", "decision": "allow"},
]}}


def batch_script(batch: list[Case]) -> str:
    lines = ["exec 9>&1 >/dev/null 2>&1 </dev/null"]
    for case in batch:
        lines.append(f"( {case.setup}; eval {shlex.quote(case.line)} )")
    return "\n".join(lines) + "\n"


def run_batch(batch: list[Case], where: Path) -> set[str]:
    """The markers bash created for these cases."""
    where.mkdir()
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(where), "LC_ALL": "C"}
    proc = subprocess.Popen(["bash", "-c", batch_script(batch)], cwd=where, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, start_new_session=True)
    try:
        proc.communicate(timeout=BATCH_TIMEOUT_S)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, 9)
            proc.wait()
    return {p.name for p in where.iterdir() if p.name.startswith("M")}


def test_no_allowed_line_runs_the_marker(tmp_path):
    (tmp_path / "policy.json").write_text(json.dumps(POLICY), encoding="utf-8")
    policy = load_policy(str(tmp_path / "policy.json"))
    generated = cases(SEED, COUNT)
    batches = [generated[i:i + BATCH] for i in range(0, COUNT, BATCH)]
    workspace = tmp_path / "ws"
    workspace.mkdir()
    # bash runs the batches on one core while this thread decides the cases on the other
    with ThreadPoolExecutor(max_workers=1) as pool:
        ran = pool.map(lambda ib: run_batch(ib[1], tmp_path / f"b{ib[0]}"), enumerate(batches))
        decisions = {c.k: decide(policy, "bash", shell_targets(workspace, c.line)).decision for c in generated}
        markers = set().union(*ran)
    unsound = [c for c in generated if c.marker in markers and decisions[c.k] == "allow"]
    allowed = sum(d == "allow" for d in decisions.values())
    print(f"{COUNT} cases: {allowed} allowed, {len(markers)} ran the marker, {len(unsound)} unsound",
          file=sys.stderr)
    assert not unsound, "\n\n".join(f"setup: {c.setup}\nline: {c.line}" for c in unsound[:10])
    # the generator must exercise both sides, or the test proves nothing
    assert allowed > COUNT // 5 and len(markers) > COUNT // 5, (allowed, len(markers))
