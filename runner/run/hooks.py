"""The run's lifecycle hooks (runner/engine/workflow_hooks.py), built once from the trusted policy, and the one way
their programs run: `bash -c` in the workspace, inside the run's sandbox as their own principal — their own HOME
and TMPDIR (as MCP servers and the runner's git have: the agent must not plant a `usercustomize.py` or a
`.gitconfig` the judge then runs), the scrubbed environment (no API key, no job token), no network, the workspace
read-only unless the entry says `writes` (a PostToolUse hook may write the paths its call was allowed to edit) —,
their JSON input on stdin, killed at their timeout (within the run's clock) or with the run.
"""

from __future__ import annotations

import fnmatch
import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO

from runner.core.events import NetworkRequest
from runner.core.outcome import Failed
from runner.engine.call import CallEnv, net_decider
from runner.engine.recorder import Recording
from runner.engine.workflow_hooks import OUTPUT_CAP, HookRun, WorkflowHooks
from runner.policy.egress import Verdict
from runner.policy.hooks import HookCommand, hook_entries
from runner.policy.model import Policy
from runner.sandbox.proxy import Decide, EgressProxy
from runner.sandbox.runtime import Sandbox
from runner.tools.base import Cancel
from runner.tools.env import scrubbed_env
from runner.tools.process import reader, run_process
from runner.tools.spill import Spill


def workflow_hooks(rec: Recording, policy: Policy, env: CallEnv) -> WorkflowHooks | None:
    """The hooks of `policy` (None: it has none). `policy` is the trusted one: a task's own policy only narrows the
    rules (runner/policy/model.py narrowed), its sections, hooks included, are never read. `env`: the run's decisions
    outside any agent's calls (runner/run/assemble.py call_env), for a hook's connections."""
    entries = hook_entries(policy.sections)
    if not entries:
        return None
    return WorkflowHooks(entries, HookProcessRunner(rec, env), rec.run_id, rec.run_dir / "events.jsonl",
                         rec.workspace)


SESSION_START_HEADING = "# Context from the workflow's SessionStart hooks"


def with_session_start(rec: Recording, hooks: WorkflowHooks | None, system: str, cancel: Cancel) -> str:
    """A new run's system prompt with what its SessionStart hooks say (their context: JSON `additionalContext`, or
    plain stdout) at its end: inside the fixed prefix, before the first request. A continued run never runs them
    again: its prompt is its record's (runner/record/conversation.py), so the prefix stays byte-stable."""
    if hooks is None or not hooks.any("SessionStart"):
        return system
    judged = hooks.judge("SessionStart", (), {"source": "startup", "agent": None}, rec.emit, cancel)
    if judged.stop is not None:
        raise Failed(f"a SessionStart hook stopped the run: {judged.stop}")
    return f"{system}\n\n{SESSION_START_HEADING}\n\n{judged.context}" if judged.context else system


class HookProcessRunner:
    """Runs hook programs for one run (runner/engine/workflow_hooks.py HookProcess)."""

    def __init__(self, rec: Recording, env: CallEnv) -> None:
        self.rec, self.env = rec, env
        self.proxies: dict[HookCommand, EgressProxy | None] = {}
        self.lock = threading.Lock()  # child agents running at once run their hooks on their own threads
        self.workspace = rec.workspace
        box = rec.ctx.sandbox
        self.box = box if isinstance(box, Sandbox) and box.active else None
        own = self.box.own_scratch("hooks") if self.box is not None else None
        if own is None:  # no sandbox: a HOME and TMPDIR of their own all the same, removed with the run
            own = Path(tempfile.mkdtemp(prefix="agent-run-hooks-"))
            for sub in ("home", "tmp"):
                (own / sub).mkdir()
            rec.lifecycle.on_close(lambda: shutil.rmtree(own, ignore_errors=True))
        self.scratch = own

    def __call__(self, command: HookCommand, payload: str, cancel: Cancel, writable: Sequence[Path]) -> HookRun:
        started = time.monotonic()
        left = cancel.remaining()
        timeout = command.timeout_s if left is None else min(command.timeout_s, left)
        env = scrubbed_env(os.environ)
        env.update(HOME=str(self.scratch / "home"), TMPDIR=str(self.scratch / "tmp"),
                   CLAUDE_PROJECT_DIR=str(self.workspace), AGENT_RUN_HOOK="1")
        argv = ["bash", "-c", command.command]
        if self.box is not None:
            layout = self.box.principal_layout(self.scratch, list(writable), command.writes)
            proxy = self._proxy(command) if command.network else None
            argv, env = self.box.wrap(argv, env, layout=layout, share_net=False, proxy=proxy)
        # Its output is read as it comes, each stream's first and last halves of OUTPUT_CAP kept (the spill's
        # windows, no file): nothing of it on disk, however much it prints before its timeout.
        out, err = Spill(None, OUTPUT_CAP // 2), Spill(None, OUTPUT_CAP // 2)
        with tempfile.TemporaryFile() as stdin:  # the payload: what the runner wrote, bounded by it
            stdin.write(payload.encode("utf-8"))
            stdin.seek(0)
            code, failure = _run(argv, env, self.workspace, timeout, cancel, stdin, out, err)
        return HookRun(code, out.text(), err.text(), time.monotonic() - started, failure, out.total)


    def _proxy(self, command: HookCommand) -> EgressProxy | None:
        """The hook's own egress proxy (one per hook program, closed with the sandbox): a connection goes out when
        the hook's `network` names its host and the policy's network rules allow it, decided and recorded as the
        run's own (a permission_decision and a network_request under the call id `hook`)."""
        with self.lock:
            if command not in self.proxies:
                assert self.box is not None
                self.proxies[command] = self.box.own_proxy(f"hook{len(self.proxies)}",
                                                           self._decider(command.network))
            return self.proxies[command]

    def _decider(self, named: tuple[str, ...]) -> Decide:
        policy = net_decider(self.env, self.rec.emit, HOOK_CALL_ID, "hook")

        def decide(host: str, port: int) -> Verdict:
            if not any(fnmatch.fnmatchcase(host, h) or fnmatch.fnmatchcase(f"{host}:{port}", h) for h in named):
                self.rec.emit(NetworkRequest(call_id=HOOK_CALL_ID, host=host, port=port, decision="deny", rule=None))
                return Verdict(False, False, "the hook's network does not name this host")
            return policy(host, port)

        return decide


HOOK_CALL_ID = "hook"


def _run(argv: list[str], env: dict[str, str], cwd: Path, timeout: float, cancel: Cancel, stdin: IO[bytes],
         out: Spill, err: Spill) -> tuple[int | None, str | None]:
    """(its exit code, or None; why it failed to run, or None). Its whole process group dies when it ends."""
    try:
        ended = run_process(cancel, argv, timeout=timeout, pumps=(reader(out.write), reader(err.write, "stderr")),
                            cwd=cwd, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    except OSError as exc:
        return None, f"cannot start: {exc}"
    if not ended.exited:
        return None, "the run is stopping" if ended.stopping else f"killed at its timeout ({timeout:g}s)"
    return ended.returncode, None

