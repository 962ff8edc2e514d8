"""Re-record examples/hello/recording with a scripted model (no API key, no network).

The recording is what `--model replay:examples/hello/recording` plays back in the
README's Quickstart. Run from the repo root with the dev extra installed:
    python examples/record_hello.py
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.conftest import agent_run_argv, clean_env  # noqa: E402
from tests.fakes.openai_server import FakeOpenAI, reply  # noqa: E402

HELLO = ROOT / "examples" / "hello"
REPORT = """# TODO report

- src/app.py:7: validate the title length before slugifying
- src/util.py:5: transliterate non-ASCII letters instead of dropping them

| file | lines |
|---|---|
| src/app.py | 12 |
| src/util.py | 7 |
"""

SCRIPT = [
    reply("I'll search the project for TODO comments.", calls=[("grep", {"pattern": "TODO", "include": "**/*.py"})]),
    reply(calls=[("bash", {"command": "wc -l src/app.py src/util.py"})]),
    reply(calls=[("write", {"path": "REPORT.md", "content": REPORT})]),
    reply("Wrote REPORT.md: 2 TODOs, in src/app.py (line 7) and src/util.py (line 5)."),
]


def main() -> int:
    with FakeOpenAI() as server:
        server.add(*SCRIPT)
        env = clean_env(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY="recording", AGENT_RUN_MODEL="scripted-demo")
        proc = subprocess.run([*agent_run_argv(), "--workspace", str(HELLO), "--policy", str(HELLO / "policy.jsonc"),
                               str(HELLO / "task.md")], env=env)
    if proc.returncode != 0:
        print(f"recording failed: exit {proc.returncode}", file=sys.stderr)
        return 1
    runs = sorted((HELLO / ".agent-run" / "runs").iterdir())
    target = HELLO / "recording"
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(runs[-1], target)
    print(f"recorded {runs[-1].name} -> {target.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
