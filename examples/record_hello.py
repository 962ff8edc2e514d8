"""Re-record examples/hello/recording with a scripted model (no API key, no network).

The recording is what `--model replay:recording` plays back in the README's Quickstart. It is made the
way the Quickstart runs it — from the example's own directory, with paths relative to it — so it names no
path of the machine it was made on beyond where it ran (run_started.workspace, summary.run_dir).
tests/test_examples.py re-records it and fails when the committed one differs in anything but run ids,
timestamps, durations, hashes and those two. Run from the repo root with the dev extra installed:
    python examples/record_hello.py
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HELLO = ROOT / "examples" / "hello"
REPORT = """# TODO report

- src/app.py:7: validate the title length before slugifying
- src/util.py:5: transliterate non-ASCII letters instead of dropping them

| file | lines |
|---|---|
| src/app.py | 12 |
| src/util.py | 7 |
"""


def record(example: Path, target: Path) -> subprocess.CompletedProcess[str]:
    """Run the example's task against the scripted model from `example` and copy the run to `target`."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from tests.conftest import agent_run_argv, clean_env
    from tests.fakes.openai_server import FakeOpenAI, reply

    script = [
        reply("I'll search the project for TODO comments.",
              calls=[("grep", {"pattern": "TODO", "include": "**/*.py"})]),
        reply(calls=[("bash", {"command": "wc -l src/app.py src/util.py"})]),
        reply(calls=[("write", {"path": "REPORT.md", "content": REPORT})]),
        reply("Wrote REPORT.md: 2 TODOs, in src/app.py (line 7) and src/util.py (line 5)."),
    ]
    runs = example / ".agent-run" / "runs"
    before = set(runs.iterdir()) if runs.is_dir() else set()
    with FakeOpenAI() as server:
        server.add(*script)
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY="recording", AGENT_RUN_MODEL="scripted-demo")
        proc = subprocess.run([*agent_run_argv(), "--policy", "policy.jsonc", "task.md"], cwd=example, env=env,
                              capture_output=True, text=True, timeout=600)
    if proc.returncode == 0:
        made = sorted(set(runs.iterdir()) - before)[-1]
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(made, target, ignore=shutil.ignore_patterns("outputs", "*.lock"))
    return proc


def main() -> int:
    # Made in a fresh copy outside any repository (as tests/test_examples.py makes it): the checkout's git,
    # its runs and a REPORT.md from an earlier Quickstart cannot change what is recorded.
    with tempfile.TemporaryDirectory() as tmp:
        example = Path(tmp) / "hello"
        shutil.copytree(HELLO, example, ignore=shutil.ignore_patterns(".agent-run", "REPORT.md", "recording"))
        proc = record(example, Path(tmp) / "recording")
        if proc.returncode != 0:
            print(f"recording failed: exit {proc.returncode}\n{proc.stderr}", file=sys.stderr)
            return 1
        shutil.rmtree(HELLO / "recording", ignore_errors=True)
        shutil.copytree(Path(tmp) / "recording", HELLO / "recording")
    print(f"recorded -> {(HELLO / 'recording').relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
